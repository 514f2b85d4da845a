// The r-functions as librspreload calls them: librsocket's own
// definitions, by the private aliases ss_rs_<name> (exported under
// SLIPSTREAM_RSPRELOAD_PRIVATE). A program linked with upstream's
// librdmacm (rstream, for one) has librdmacm's r-functions of the same
// names earlier in the symbol lookup order than our librsocket, which
// comes in as the preload's dependency: calls by those names would reach
// upstream's, which knows none of our sockets. Include this instead of
// <rdma/rsocket.h>; the names stay the same in the code.
#pragma once
#ifdef SLIPSTREAM_RDMA_RSOCKET_H
#error "librsocket/rsocket_own.h must come before any other include of rsocket.h"
#endif
#define raccept ss_rs_raccept
#define rbind ss_rs_rbind
#define rclose ss_rs_rclose
#define rconnect ss_rs_rconnect
#define rfcntl ss_rs_rfcntl
#define rgetpeername ss_rs_rgetpeername
#define rgetsockname ss_rs_rgetsockname
#define rgetsockopt ss_rs_rgetsockopt
#define riomap ss_rs_riomap
#define riounmap ss_rs_riounmap
#define riowrite ss_rs_riowrite
#define rlisten ss_rs_rlisten
#define rpoll ss_rs_rpoll
#define rread ss_rs_rread
#define rreadv ss_rs_rreadv
#define rrecv ss_rs_rrecv
#define rrecvfrom ss_rs_rrecvfrom
#define rrecvmsg ss_rs_rrecvmsg
#define rselect ss_rs_rselect
#define rsend ss_rs_rsend
#define rsendmsg ss_rs_rsendmsg
#define rsendto ss_rs_rsendto
#define rsetsockopt ss_rs_rsetsockopt
#define rshutdown ss_rs_rshutdown
#define rsocket ss_rs_rsocket
#define rwrite ss_rs_rwrite
#define rwritev ss_rs_rwritev
#include "include/rdma/rsocket.h"
