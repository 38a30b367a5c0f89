// A small JIT workload: hot JavaScript functions compiled by V8, named in the perf map
// that --perf-basic-prof writes.
function leaf(n) {
  let x = 0;
  for (let i = 0; i < n; i++) x = (x * 31 + i) % 1000003;
  return x;
}
function middle(n) {
  return leaf(n) + leaf(n >> 1);
}
function outer(rounds) {
  let t = 0;
  for (let r = 0; r < rounds; r++) t += middle(20000);
  return t;
}
console.log(outer(Number(process.argv[2] || 3000)));
