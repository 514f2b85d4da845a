// Proof of where connections went: per-process counts of connections set
// up on rsockets (by provider) and on kernel TCP. With the setting
// preload.stats_dir (SLIPSTREAM_PRELOAD_STATS=DIR) each process keeps DIR/rspreload.PID up to
// date (rewritten at each new connection, so a killed server leaves its
// counts), one line:
//   pid=P comm=NAME rsockets=N shm=A verbs=B tcp=C abandoned=D kernel_tcp=M
// (abandoned: rsocket connections a listener dropped because their client
// gave up before they were established; not in rsockets).
#pragma once

namespace ss::preload::stats {

void count_rsocket(const char* provider);  // a connection made or accepted on an rsocket
void count_kernel();                       // a connection the kernel carries
// A connection counted on `provider` that went to the kernel after all
// (a connect that failed after EINPROGRESS).
void moved_to_kernel(const char* provider);
// An accepted rsocket connection whose client had given up (failed before
// the program took it, nothing to read): closed unseen by the program.
void count_abandoned();

}  // namespace ss::preload::stats
