// Connection::handover: the state another TCP carries the connection on
// with (handover.h).
#include "core/net/tcp/handover.h"

#include <algorithm>
#include <cerrno>

#include "core/net/tcp/connection.h"

namespace ss::net::tcp {

int Connection::handover(Handover* h, uint64_t now) {
  // Past ESTABLISHED a FIN was sent or taken, which Linux's repair mode
  // cannot carry; before it there is nothing to carry on.
  if (state_ != State::kEstablished || error_) return -EOPNOTSUPP;
  h->snd_una = snd_una_;
  h->rcv_nxt = rcv_nxt_;
  h->snd_wl1 = snd_wl1_;
  h->snd_wnd = snd_wnd_;
  h->max_snd_wnd = std::max(max_snd_wnd_, snd_wnd_);
  h->rcv_wup = rcv_nxt_;
  h->rcv_wnd = rcv_adv_ - rcv_nxt_;
  h->peer_mss = peer_mss_;
  h->window_scaling = ws_ok_;
  h->snd_wscale = snd_wscale_;
  h->rcv_wscale = rcv_wscale_;
  h->sack = sack_ok_;
  h->timestamps = ts_ok_;
  // Even: Linux (6.7 on) reads bit 0 of TCP_TIMESTAMP as "a microsecond clock".
  h->ts_val = (ts_now(now) + 2) & ~1u;
  // Sent: everything up to the highest byte that went out (a retransmission
  // under way included); what is held out of order is left for the peer to
  // send again (it may, RFC 2018 §8).
  const size_t sent = snd_max_ - snd_una_;
  h->sent.resize(sent);
  h->unsent.resize(sndq_.size() - sent);
  if (sent) sndq_.copy_out(0, sent, h->sent.data());
  if (!h->unsent.empty()) sndq_.copy_out(sent, h->unsent.size(), h->unsent.data());
  h->unread.resize(rxq_.readable());
  rxq_.copy_out(h->unread, /*peek=*/true, /*past_offer=*/true);
  return 0;
}

}  // namespace ss::net::tcp
