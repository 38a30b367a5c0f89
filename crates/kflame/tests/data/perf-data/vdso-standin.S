/* A stand-in for the x86_64 vDSO recorded in vdso-*.data (see make-vdso-standin.sh): no code
   (int3 fill), only the exported functions at their offsets, so that symbol lookup by image
   offset sees the same table as in the recorded image. */
        .macro vfunc name, alias, off, size
        .org \off - 0x780, 0xcc
        .globl \name
        .type \name, @function
        .weak \alias
        .type \alias, @function
\name:
\alias:
        .fill \size, 1, 0xcc
        .size \name, \size
        .size \alias, \size
        .endm

        .text
        vfunc __vdso_gettimeofday, gettimeofday, 0x810, 683
        vfunc __vdso_time, time, 0xac0, 40
        vfunc __vdso_clock_gettime, clock_gettime, 0xaf0, 902
        vfunc __vdso_clock_getres, clock_getres, 0xe80, 127
        vfunc __vdso_getcpu, getcpu, 0xf00, 44
        vfunc __vdso_getrandom, getrandom, 0xf40, 947
