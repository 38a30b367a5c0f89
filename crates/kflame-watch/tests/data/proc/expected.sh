#!/bin/sh
# Figures computed by hand (awk) from a capture's two reads, the way mpstat and iostat -x
# compute them; the tests compare the watcher's figures with these.
set -eu
d=${1:?usage: expected.sh DIR}
awk 'FNR==NR && $1 ~ /^cpu/ { for (i=2;i<=11;i++) a[$1,i]=$i; next }
     $1 ~ /^cpu/ { t=0; for (i=2;i<=9;i++) t+=$i-a[$1,i];
       printf "%s usr=%.6f nice=%.6f sys=%.6f iowait=%.6f irq=%.6f soft=%.6f steal=%.6f idle=%.6f\n", $1,
         100*(($2-a[$1,2])-($10-a[$1,10]))/t, 100*(($3-a[$1,3])-($11-a[$1,11]))/t, 100*($4-a[$1,4])/t,
         100*($6-a[$1,6])/t, 100*($7-a[$1,7])/t, 100*($8-a[$1,8])/t, 100*($9-a[$1,9])/t, 100*($5-a[$1,5])/t }' \
    "$d/a/proc/stat" "$d/b/proc/stat"
secs=$(awk 'FNR==NR { a=$1; next } { printf "%.6f", $1-a }' "$d/a/proc/uptime" "$d/b/proc/uptime")
echo "interval=$secs"
awk -v s="$secs" 'FNR==NR && $1=="ctxt" { c=$2 } FNR==NR && $1=="processes" { p=$2 } FNR==NR { next }
     $1=="ctxt" { printf "ctxt=%.6f\n", ($2-c)/s } $1=="processes" { printf "forks=%.6f\n", ($2-p)/s }' \
    "$d/a/proc/stat" "$d/b/proc/stat"
awk -v s="$secs" 'FNR==NR { for (i=4;i<=NF;i++) a[$3,i]=$i; next }
     $3 !~ /^(loop|ram)/ { d=$3; r=$4-a[d,4]; w=$8-a[d,8];
       if (r+w == 0 && $13-a[d,13] == 0) next;
       printf "%s rB/s=%.6f wB/s=%.6f r/s=%.6f w/s=%.6f util=%.6f r_await=%.6f w_await=%.6f aqu=%.6f\n", d,
         ($6-a[d,6])*512/s, ($10-a[d,10])*512/s, r/s, w/s, 100*($13-a[d,13])/(s*1000),
         (r ? ($7-a[d,7])/r : 0), (w ? ($11-a[d,11])/w : 0), ($14-a[d,14])/(s*1000) }' \
    "$d/a/proc/diskstats" "$d/b/proc/diskstats"
