/* kfbar: a hot function two calls below main, in a program built with -O2
 * -fomit-frame-pointer and without any library (its own _start and system calls), so
 * that the unwinding tests need no binary but this one.
 *
 * Usage: kfbar SECONDS (whole seconds; default 1). Written for kflame (Apache-2.0). */

typedef unsigned long u64;

static long sys2(long nr, long a, long b) {
    long ret;
    __asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b) : "rcx", "r11", "memory");
    return ret;
}

struct timespec64 { long sec, nsec; };

static long seconds_now(void) {
    struct timespec64 ts;
    sys2(228 /* clock_gettime */, 1 /* CLOCK_MONOTONIC */, (long)&ts);
    return ts.sec;
}

__attribute__((noinline)) u64 kfbar_inner(u64 n) {
    volatile u64 buf[16];
    u64 x = 0;
    for (u64 i = 0; i < n; i++) {
        buf[i & 15] = i * i;
        x += buf[(i * 7) & 15];
    }
    return x;
}

__attribute__((noinline)) u64 kfbar_outer(u64 n) {
    u64 r = kfbar_inner(n);
    __asm__ volatile("" : "+r"(r) : : "memory");
    return r ^ n;
}

__attribute__((noinline)) int main(int argc, char **argv) {
    long seconds = 1;
    if (argc > 1 && argv[1][0] >= '1' && argv[1][0] <= '9')
        seconds = argv[1][0] - '0';
    long end = seconds_now() + seconds + 1;
    u64 sum = 0;
    while (seconds_now() < end)
        sum += kfbar_outer(200000);
    return (int)(sum & 1);
}

/* The entry point: argc and argv from the initial stack; the return address of _start is
 * undefined (as in every C library's start code), which ends an unwind there. */
__asm__(
    ".text\n"
    ".globl _start\n"
    ".type _start, @function\n"
    "_start:\n"
    ".cfi_startproc\n"
    ".cfi_undefined rip\n"
    "    xor %ebp, %ebp\n"
    "    mov (%rsp), %rdi\n"
    "    lea 8(%rsp), %rsi\n"
    "    and $-16, %rsp\n"
    "    call main\n"
    "    mov %eax, %edi\n"
    "    mov $60, %eax\n"
    "    syscall\n"
    "    hlt\n"
    ".cfi_endproc\n"
    ".size _start, .-_start\n");
