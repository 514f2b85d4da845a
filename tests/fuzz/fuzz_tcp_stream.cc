// Fuzz target: the tcp provider's frame stream, as its endpoint reads it
// (TcpEndpoint over util's StreamEndpoint: hello reply, writes, writes with
// immediate, control frames, the end of the stream), fed split at the
// points the input chooses (stream_peer.h says how the input reads).
#include <netinet/in.h>

#include "core/prov/tcp/tcp_endpoint.h"
#include "tests/fuzz/stream_peer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Input in(data, size);
  const uint8_t mode = in.u8();
  fuzz::StreamPeer peer;
  std::unique_ptr<ss::prov::Endpoint> ep;
  if (mode & 1) {
    // Connecting over a stream that is already there (no destination).
    sockaddr_in none{};
    ep = ss::prov::tcp::TcpEndpoint::make_active(peer.ep_fd(), reinterpret_cast<sockaddr*>(&none),
                                                 0);
  } else {
    // Accepted: the listener read our hello, whose private data this is.
    const uint8_t* pdata;
    const size_t n = in.take(in.u8() % 64, &pdata);
    ep = ss::prov::tcp::TcpEndpoint::make_passive(peer.ep_fd(), pdata, n);
  }
  peer.run(std::move(ep), mode & 1, in);
  return 0;
}
