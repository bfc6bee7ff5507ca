// fsauditd's malloc settings, read by jemalloc at its first allocation (before main). Measured at
// 10,000 filesystems (docs/benchmarks.md, runs BN-BO and the run that shipped this): on glibc about
// 16 MB of the heap stayed resident but free after the first cycle's peak, spread over pages that
// live records share; jemalloc with its defaults held more still (an arena per core, thread caches,
// freed pages kept for 10 s). With these settings RSS was 15 MB below glibc's:
//   narenas:1        the daemon allocates little and rarely: one arena, no per-core copies of its peaks;
//   tcache:false     no per-thread caches of freed blocks on twenty-odd mostly idle threads;
//   dirty_decay_ms:0, muzzy_decay_ms:0
//                    freed pages go back to the kernel at once, the first cycle's peak with them.
// MALLOC_CONF in the environment still overrides any of them (jemalloc reads it after this string);
// the log's "malloc:" line at start says what is in effect.
extern "C" {
extern const char* malloc_conf;
const char* malloc_conf = "narenas:1,tcache:false,dirty_decay_ms:0,muzzy_decay_ms:0";
}
