#include "tests/core/tcp_script.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <sstream>
#include <vector>

#include "core/mem/pool.h"
#include "core/net/tcp/connection.h"
#include "core/net/tcp/header.h"
#include "core/net/tcp/options.h"
#include "core/net/tcp/seq.h"
#include "core/net/tcp/timer_queue.h"
#include "tests/core/tcp_room_sink.h"

namespace ss::net::tcp::script {

namespace {

constexpr uint16_t kLocalPort = 8080, kRemotePort = 40000;

uint8_t our_byte(uint64_t k) { return static_cast<uint8_t>(k * 7 + 1); }
uint8_t peer_byte(uint64_t k) { return static_cast<uint8_t>(k * 13 + 5); }

const std::map<std::string, int>& errno_names() {
  static const std::map<std::string, int> m = {
      {"EAGAIN", EAGAIN}, {"ECONNRESET", ECONNRESET}, {"ECONNREFUSED", ECONNREFUSED},
      {"EPIPE", EPIPE},   {"ETIMEDOUT", ETIMEDOUT},   {"ENOTCONN", ENOTCONN},
      {"EINVAL", EINVAL},
  };
  return m;
}

std::string errno_name(long v) {
  for (const auto& [name, e] : errno_names()) {
    if (e == v) return name;
  }
  return std::to_string(v);
}

struct Emitted {
  uint64_t at_us;
  std::vector<uint8_t> bytes;
};

class WireSink : public RoomSink {
 public:
  WireSink(const uint64_t* now, std::deque<Emitted>* out) : now_(now), out_(out) {}
  void sent(std::span<const uint8_t> seg) override {
    out_->push_back(Emitted{*now_, std::vector<uint8_t>(seg.begin(), seg.end())});
  }

 private:
  const uint64_t* now_;
  std::deque<Emitted>* out_;
};

std::vector<std::string> words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> w;
  for (std::string x; in >> x;) w.push_back(x);
  return w;
}

// A segment as a line states it.
struct SegmentSpec {
  uint8_t flags = 0;
  uint32_t seq = 0, len = 0;
  bool has_ack = false, has_win = false, has_opts = false;
  uint32_t ack = 0, win = 0;
  std::string opts;  // between < and >
};

bool parse_u32(const std::string& s, uint32_t* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 0);
  if (*end || errno || v > UINT32_MAX) return false;
  *out = static_cast<uint32_t>(v);
  return true;
}

std::string flags_text(uint8_t f) {
  std::string s;
  for (auto [bit, c] : {std::pair{kSyn, 'S'},
                        {kFin, 'F'},
                        {kRst, 'R'},
                        {kPsh, 'P'},
                        {kUrg, 'U'},
                        {kEce, 'E'},
                        {kCwr, 'C'}}) {
    if (f & bit) s += c;
  }
  if (f & kAck) s += '.';
  return s;
}

std::string options_text(const Options& o) {
  std::vector<std::string> parts;
  if (o.has_mss) parts.push_back("mss " + std::to_string(o.mss));
  if (o.sack_permitted) parts.push_back("sackOK");
  if (o.has_ts) parts.push_back("ts " + std::to_string(o.ts_val) + " " + std::to_string(o.ts_ecr));
  if (o.has_wscale) parts.push_back("ws " + std::to_string(o.wscale));
  if (o.sack_count) {
    std::string s = "sack";
    for (size_t i = 0; i < o.sack_count; i++) {
      s += " " + std::to_string(o.sack[i].left) + ":" + std::to_string(o.sack[i].right);
    }
    parts.push_back(s);
  }
  std::string out = "<";
  for (size_t i = 0; i < parts.size(); i++) out += (i ? "," : "") + parts[i];
  return out + ">";
}

class Runner {
 public:
  explicit Runner(size_t frame_bytes) : sink_(&now_, &emitted_), frame_bytes_(frame_bytes) {
    cfg_.ts_offset = 100;
    mem::PoolOptions po;
    po.frame_size = 2048;
    po.frames_per_chunk = 64;
    po.max_chunks = 64;
    po.backing = mem::Backing::kPrivate;
    if (mem::Pool::create(po, &pool_) != 0) pool_.reset();
  }
  ~Runner() {
    conn_.reset();  // its buffers go back before the pool
  }

  std::string run(const std::string& text) {
    if (!pool_) return "no pool";
    std::istringstream in(text);
    int n = 0;
    for (std::string line; std::getline(in, line);) {
      n++;
      const size_t hash = line.find('#');
      if (hash != std::string::npos) line.erase(hash);
      if (words(line).empty()) continue;
      if (!step(line)) return "line " + std::to_string(n) + ": " + line + "\n  " + error_;
    }
    if (!emitted_.empty()) {
      return "at the end: unexpected segment " + describe(emitted_.front());
    }
    return "";
  }

 private:
  bool fail(const std::string& why) {
    error_ = why;
    return false;
  }

  bool step(const std::string& line) {
    std::vector<std::string> w = words(line);
    if (w[0] == "set") return set(w);
    double t = 0;
    const std::string& ts = w[0];
    try {
      t = std::stod(ts[0] == '+' ? ts.substr(1) : ts);
    } catch (...) {
      return fail("bad time");
    }
    uint64_t at = static_cast<uint64_t>(std::llround(t * 1e6));
    if (ts[0] == '+') at += line_time_;
    if (at < now_) return fail("time goes backwards");
    line_time_ = at;
    advance(at);
    if (w.size() < 2) return fail("nothing at this time");
    if (w[1] == ">") return expect_segment(line);
    if (!emitted_.empty()) return fail("unexpected segment " + describe(emitted_.front()));
    if (w[1] == "<") return inject(line);
    return call(w);
  }

  void advance(uint64_t to) {
    while (timers_.next_due() <= to) {
      now_ = std::max(now_, timers_.next_due());
      auto* t = static_cast<ConnectionTimer*>(timers_.pop_due(now_));
      if (t) t->conn->on_timer(t, now_);
    }
    now_ = to;
  }

  bool set(const std::vector<std::string>& w) {
    if (w.size() != 3) return fail("set NAME VALUE");
    if (conn_) return fail("set after the connection opened");
    const std::string& k = w[1];
    if (k == "cc") {
      if (w[2] == "reno")
        cfg_.cc = CcAlgo::kNewReno;
      else if (w[2] == "cubic")
        cfg_.cc = CcAlgo::kCubic;
      else if (w[2] == "none")
        cfg_.cc = CcAlgo::kNone;
      else
        return fail("cc: reno, cubic or none");
      return true;
    }
    uint32_t v = 0;
    if (!parse_u32(w[2], &v)) return fail("bad value");
    if (k == "mss")
      cfg_.mss = static_cast<uint16_t>(v);
    else if (k == "rcvbuf")
      cfg_.rcv_buf = v;
    else if (k == "sndbuf")
      cfg_.snd_buf = v;
    else if (k == "ws")
      cfg_.window_scaling = v;
    else if (k == "ts")
      cfg_.timestamps = v;
    else if (k == "sack")
      cfg_.sack = v;
    else if (k == "nodelay")
      cfg_.nodelay = v;
    else if (k == "cork")
      cfg_.cork = v;
    else if (k == "iss")
      iss_ = v;
    else if (k == "min_rto")
      cfg_.min_rto_us = uint64_t{v} * 1000;
    else if (k == "delack")
      cfg_.delack_us = uint64_t{v} * 1000;
    else if (k == "msl")
      cfg_.msl_us = uint64_t{v} * 1000;
    else if (k == "syn_retries")
      cfg_.syn_retries = static_cast<int>(v);
    else if (k == "retries")
      cfg_.retries = static_cast<int>(v);
    else if (k == "ts_offset")
      cfg_.ts_offset = v;
    else if (k == "keepalive")
      cfg_.keepalive = v;
    else if (k == "keepidle")
      cfg_.keep_idle_us = uint64_t{v} * 1000;
    else if (k == "keepintvl")
      cfg_.keep_intvl_us = uint64_t{v} * 1000;
    else if (k == "keepcnt")
      cfg_.keep_cnt = static_cast<int>(v);
    else if (k == "user_timeout")
      cfg_.user_timeout_us = uint64_t{v} * 1000;
    else if (k == "slack")
      slack_us_ = uint64_t{v} * 1000;
    else
      return fail("unknown setting " + k);
    return true;
  }

  bool parse_segment(const std::string& line, SegmentSpec* s) {
    std::string head = line;
    const size_t lt = line.find('<', line.find_first_of("<>") + 1);
    if (lt != std::string::npos) {
      const size_t gt = line.find('>', lt);
      if (gt == std::string::npos) return fail("options without '>'");
      s->has_opts = true;
      s->opts = line.substr(lt + 1, gt - lt - 1);
      head = line.substr(0, lt);
    }
    std::vector<std::string> w = words(head);
    if (w.size() < 4) return fail("SEGMENT: FLAGS SEQ[:END] ...");
    for (char c : w[2]) {
      switch (c) {
        case 'S':
          s->flags |= kSyn;
          break;
        case 'F':
          s->flags |= kFin;
          break;
        case 'R':
          s->flags |= kRst;
          break;
        case 'P':
          s->flags |= kPsh;
          break;
        case 'U':
          s->flags |= kUrg;
          break;
        case 'E':
          s->flags |= kEce;
          break;
        case 'C':
          s->flags |= kCwr;
          break;
        case '.':
          s->flags |= kAck;
          break;
        default:
          return fail(std::string("bad flag ") + c);
      }
    }
    const size_t colon = w[3].find(':');
    uint32_t end = 0;
    if (!parse_u32(w[3].substr(0, colon), &s->seq)) return fail("bad SEQ");
    if (colon != std::string::npos) {
      if (!parse_u32(w[3].substr(colon + 1), &end)) return fail("bad END");
      s->len = end - s->seq;
    }
    for (size_t i = 4; i < w.size(); i += 2) {
      if (i + 1 >= w.size()) return fail("a value missing after " + w[i]);
      uint32_t v = 0;
      if (!parse_u32(w[i + 1], &v)) return fail("bad number " + w[i + 1]);
      if (w[i] == "ack") {
        s->has_ack = true;
        s->ack = v;
      } else if (w[i] == "win") {
        s->has_win = true;
        s->win = v;
      } else {
        return fail("unknown field " + w[i]);
      }
    }
    return true;
  }

  // Options as the peer writes them: in the order given, padded.
  bool write_peer_options(const std::string& spec, std::vector<uint8_t>* out) {
    std::istringstream in(spec);
    for (std::string item; std::getline(in, item, ',');) {
      std::vector<std::string> w = words(item);
      if (w.empty()) continue;
      std::vector<uint32_t> v;
      for (size_t i = 1; i < w.size(); i++) {
        if (w[0] == "sack") continue;
        uint32_t x = 0;
        if (!parse_u32(w[0] == "raw" ? "0x" + w[i] : w[i], &x)) return fail("bad option " + item);
        v.push_back(x);
      }
      auto be16 = [out](uint32_t x) {
        out->push_back(static_cast<uint8_t>(x >> 8));
        out->push_back(static_cast<uint8_t>(x));
      };
      auto be32 = [&](uint32_t x) {
        be16(x >> 16);
        be16(x & 0xffff);
      };
      if (w[0] == "mss" && v.size() == 1) {
        out->insert(out->end(), {kOptMss, 4});
        be16(v[0]);
      } else if (w[0] == "ws" && v.size() == 1) {
        out->insert(out->end(), {kOptWscale, 3, static_cast<uint8_t>(v[0])});
      } else if (w[0] == "sackOK" && v.empty()) {
        out->insert(out->end(), {kOptSackPermitted, 2});
      } else if (w[0] == "ts" && v.size() == 2) {
        out->insert(out->end(), {kOptTimestamps, 10});
        be32(v[0]);
        be32(v[1]);
      } else if (w[0] == "nop" && v.empty()) {
        out->push_back(kOptNop);
      } else if (w[0] == "eol" && v.empty()) {
        out->push_back(kOptEnd);
      } else if (w[0] == "sack" && w.size() > 1) {
        out->insert(out->end(), {kOptSack, static_cast<uint8_t>(2 + 8 * (w.size() - 1))});
        for (size_t i = 1; i < w.size(); i++) {
          const size_t c = w[i].find(':');
          uint32_t l = 0, r = 0;
          if (c == std::string::npos || !parse_u32(w[i].substr(0, c), &l) ||
              !parse_u32(w[i].substr(c + 1), &r)) {
            return fail("sack L:R");
          }
          be32(l);
          be32(r);
        }
      } else if (w[0] == "raw") {
        for (uint32_t x : v) out->push_back(static_cast<uint8_t>(x));
      } else {
        return fail("bad option " + item);
      }
    }
    while (out->size() % 4) out->push_back(kOptEnd);
    if (out->size() > kMaxOptionsLen) return fail("options longer than 40 bytes");
    return true;
  }

  bool inject(const std::string& line) {
    SegmentSpec s;
    if (!parse_segment(line, &s)) return false;
    std::vector<uint8_t> opts;
    if (s.has_opts && !write_peer_options(s.opts, &opts)) return false;
    if ((s.flags & kSyn) && !have_peer_isn_) {
      peer_isn_ = s.seq;
      have_peer_isn_ = true;
    }
    mem::Buffer frame = pool_->get();
    const size_t total = kHeaderLen + opts.size() + s.len;
    if (!frame || frame.set_size(total) != 0) return fail("segment larger than a frame");
    auto* p = static_cast<uint8_t*>(frame.data());
    Header h;
    h.src_port = kRemotePort;
    h.dst_port = kLocalPort;
    h.seq = s.seq;
    h.ack = s.ack;
    h.flags = s.flags;
    h.window = static_cast<uint16_t>(s.has_win ? s.win : 65535);
    write_header(p, h, opts.size());
    if (!opts.empty()) std::memcpy(p + kHeaderLen, opts.data(), opts.size());
    const uint32_t first = s.seq + ((s.flags & kSyn) ? 1 : 0);
    for (uint32_t i = 0; i < s.len; i++) {
      p[kHeaderLen + opts.size() + i] = peer_byte(first + i - peer_isn_ - 1);
    }
    // What the stack does with a frame: parse, then hand the parts over.
    Header parsed;
    std::span<const uint8_t> data;
    if (parse_header({p, total}, &parsed, &data) != HeaderVerdict::kOk) {
      return fail("the segment does not parse");
    }
    Options o;
    parse_options(parsed.options, parsed.flags & kSyn, &o);
    frame.pull_head(total - data.size());
    if (frame_bytes_ && !spread(frame)) return fail("no frame to spread the data over");
    if (!conn_) {
      if (!passive_ || !(s.flags & kSyn)) return fail("no connection to take this segment");
      open();
      conn_->accept_syn(parsed, o, iss_, now_);
      return true;
    }
    conn_->input(parsed, o, std::move(frame), now_);
    return true;
  }

  std::string describe(const Emitted& e) {
    Header h;
    std::span<const uint8_t> data;
    if (parse_header(e.bytes, &h, &data) != HeaderVerdict::kOk) return "(unparsable)";
    Options o;
    parse_options(h.options, h.flags & kSyn, &o);
    std::ostringstream s;
    s << (e.at_us / 1e6) << " > " << flags_text(h.flags) << " " << h.seq;
    if (!data.empty()) s << ":" << h.seq + data.size();
    if (h.flags & kAck) s << " ack " << h.ack;
    s << " win " << h.window << " " << options_text(o);
    return s.str();
  }

  bool expect_segment(const std::string& line) {
    SegmentSpec s;
    if (!parse_segment(line, &s)) return false;
    if (emitted_.empty()) return fail("not sent");
    const Emitted e = std::move(emitted_.front());
    emitted_.pop_front();
    const std::string got = "sent: " + describe(e);
    const uint64_t dt = e.at_us > line_time_ ? e.at_us - line_time_ : line_time_ - e.at_us;
    if (dt > slack_us_) return fail("sent at another time; " + got);
    Header h;
    std::span<const uint8_t> data;
    if (parse_header(e.bytes, &h, &data) != HeaderVerdict::kOk) return fail("unparsable; " + got);
    if (h.src_port != kLocalPort || h.dst_port != kRemotePort) return fail("ports; " + got);
    Options o;
    if (parse_options(h.options, h.flags & kSyn, &o) != OptionsVerdict::kOk) {
      return fail("our options do not parse cleanly; " + got);
    }
    if (h.flags != s.flags || h.seq != s.seq || data.size() != s.len) return fail(got);
    if ((h.flags & kAck) && (!s.has_ack || h.ack != s.ack)) return fail("ack; " + got);
    if (s.has_win && h.window != s.win) return fail("window; " + got);
    if (s.has_opts) {
      Options want;
      std::vector<uint8_t> bytes;
      if (!write_peer_options(s.opts, &bytes)) return false;
      parse_options(bytes, h.flags & kSyn, &want);
      if (options_text(want) != options_text(o)) return fail("options; " + got);
    }
    const uint32_t first = s.seq + ((s.flags & kSyn) ? 1 : 0);
    for (uint32_t i = 0; i < s.len; i++) {
      if (data[i] != our_byte(first + i - iss_ - 1)) {
        return fail("data byte " + std::to_string(i) + " differs; " + got);
      }
    }
    return true;
  }

  void open() {
    conn_ = std::make_unique<Connection>(cfg_, kLocalPort, kRemotePort, &sink_, &timers_);
  }

  bool result(const std::vector<std::string>& w, size_t at, long got, long dflt) {
    long want = dflt;
    if (w.size() > at + 1 && w[at] == "=") {
      const auto e = errno_names().find(w[at + 1]);
      if (e != errno_names().end()) {
        want = -e->second;
      } else {
        try {
          want = std::stol(w[at + 1]);
        } catch (...) {
          return fail("bad result");
        }
      }
    }
    if (got != want) {
      auto text = [](long v) { return v < 0 ? errno_name(-v) : std::to_string(v); };
      return fail("returned " + text(got) + ", expected " + text(want));
    }
    return true;
  }

  bool call(const std::vector<std::string>& w) {
    const std::string& c = w[1];
    if (c == "connect") {
      if (conn_) return fail("already open");
      open();
      conn_->connect(iss_, now_);
      return true;
    }
    if (c == "listen") {
      passive_ = true;
      return true;
    }
    if (!conn_) return fail("no connection");
    auto number = [&](size_t i, uint32_t* v) {
      return i < w.size() && parse_u32(w[i], v) ? true : fail("a number after " + c);
    };
    uint32_t n = 0;
    if (c == "send") {
      if (!number(2, &n)) return false;
      std::vector<uint8_t> b(n);
      for (uint32_t i = 0; i < n; i++) b[i] = our_byte(written_ + i);
      const ssize_t r = conn_->send(b, now_);
      if (r > 0) written_ += static_cast<uint64_t>(r);
      return result(w, 3, r, n);
    }
    if (c == "recv") {
      if (!number(2, &n)) return false;
      const bool peek = w.size() > 3 && w[3] == "peek";
      std::vector<uint8_t> b(n);
      const ssize_t r = conn_->recv(b, peek, now_);
      for (ssize_t i = 0; i < r; i++) {
        if (b[i] != peer_byte(read_ + static_cast<uint64_t>(i))) {
          return fail("read byte " + std::to_string(i) + " differs");
        }
      }
      if (r > 0 && !peek) read_ += static_cast<uint64_t>(r);
      return result(w, peek ? 4 : 3, r, n);
    }
    if (c == "shutdown") return result(w, 2, conn_->shutdown_write(now_), 0);
    if (c == "close") {
      conn_->close(now_);
      return true;
    }
    if (c == "abort") {
      conn_->abort(now_);
      return true;
    }
    if (c == "quickack") {
      conn_->quickack();
      return true;
    }
    if (c == "hold") {  // the stack reads a batch of segments from here
      conn_->hold_acks(true);
      return true;
    }
    if (c == "release") {  // the batch's end
      conn_->hold_acks(false);
      conn_->release_ack(now_);
      return true;
    }
    if (c == "nodelay") {
      if (!number(2, &n)) return false;
      conn_->set_nodelay(n, now_);
      return true;
    }
    if (c == "option") {
      static const std::pair<const char*, Option> kNames[] = {
          {"nodelay", Option::kNodelay},   {"cork", Option::kCork},
          {"quickack", Option::kQuickack}, {"keepalive", Option::kKeepalive},
          {"keepidle", Option::kKeepIdle}, {"keepintvl", Option::kKeepIntvl},
          {"keepcnt", Option::kKeepCnt},   {"user_timeout", Option::kUserTimeout},
          {"rcvbuf", Option::kRcvBuf},     {"sndbuf", Option::kSndBuf}};
      if (w.size() < 4 || !number(3, &n)) return fail("option NAME VALUE");
      for (const auto& [name, o] : kNames)
        if (w[2] == name) {
          const bool ms =
              o == Option::kKeepIdle || o == Option::kKeepIntvl || o == Option::kUserTimeout;
          conn_->set_option(o, ms ? int64_t{n} * 1000 : int64_t{n}, now_);
          return true;
        }
      return fail("unknown option " + w[2]);
    }
    if (c == "state") {
      if (w.size() < 3) return fail("state NAME");
      const std::string got = state_name(conn_->state());
      return got == w[2] ? true : fail("state is " + got);
    }
    if (c == "error") {
      if (w.size() < 3) return fail("error NAME|0");
      const int e = conn_->take_error();
      const std::string got = e ? errno_name(e) : "0";
      return got == w[2] ? true : fail("error is " + got);
    }
    if (c == "readable" || c == "writable") {
      if (!number(2, &n)) return false;
      const bool got = c == "readable" ? conn_->readable() : conn_->writable();
      return got == (n != 0) ? true : fail(c + " is " + std::to_string(got));
    }
    if (c == "counter") {
      if (w.size() < 4 || !number(3, &n)) return fail("counter NAME N");
      const Counters& k = conn_->counters();
      const std::map<std::string, uint64_t> m = {
          {"retrans_segs", k.retrans_segs},
          {"data_segs_in", k.data_segs_in},
          {"data_segs_out", k.data_segs_out},
          {"bytes_in", k.bytes_in},
          {"bytes_out", k.bytes_out},
          {"bytes_retrans", k.bytes_retrans},
          {"bytes_acked", k.bytes_acked},
          {"rto_expiries", k.rto_expiries},
          {"ooo_segs", k.ooo_segs},
          {"dup_segs", k.dup_segs},
          {"paws_drops", k.paws_drops},
          {"out_of_window", k.out_of_window},
          {"challenge_acks", k.challenge_acks},
          {"ack_beyond_sent", k.ack_beyond_sent},
          {"rst_in", k.rst_in},
          {"rst_out", k.rst_out},
          {"zero_window_probes", k.zero_window_probes},
          {"ooo_refused", k.ooo_refused},
          {"sack_recoveries", k.sack_recoveries},
          {"dupack_recoveries", k.dupack_recoveries},
          {"rack_lost", k.rack_lost},
          {"dupack_lost", k.dupack_lost},
          {"tlp_probes", k.tlp_probes},
          {"dsacks_in", k.dsacks_in},
          {"bad_sacks", k.bad_sacks},
          {"keepalive_probes", k.keepalive_probes},
          {"tlp_repairs", k.tlp_repairs},
      };
      const auto it = m.find(w[2]);
      if (it == m.end()) return fail("no counter " + w[2]);
      return it->second == n ? true : fail(w[2] + " is " + std::to_string(it->second));
    }
    if (c == "snd_wnd" || c == "mss" || c == "cwnd") {
      if (!number(2, &n)) return false;
      const uint32_t got = c == "mss"    ? conn_->mss()
                           : c == "cwnd" ? conn_->info().snd_cwnd
                                         : conn_->snd_wnd();
      return got == n ? true : fail(c + " is " + std::to_string(got));
    }
    if (c == "rto") {
      if (!number(2, &n)) return false;
      const uint64_t got = conn_->rtt().rto_us();
      return got == uint64_t{n} * 1000 ? true : fail("rto is " + std::to_string(got) + " us");
    }
    return fail("unknown call " + c);
  }

  Config cfg_;
  uint32_t iss_ = 0, peer_isn_ = 0;
  bool have_peer_isn_ = false, passive_ = false;
  uint64_t now_ = 0, line_time_ = 0, slack_us_ = 0;
  uint64_t written_ = 0, read_ = 0;
  std::deque<Emitted> emitted_;
  WireSink sink_;
  TimerQueue timers_;
  // Moves frame's data past frame_bytes_ into frames linked after it.
  bool spread(mem::Buffer& frame) {
    const auto* p = static_cast<const uint8_t*>(frame.data());
    const size_t n = frame.size();
    for (size_t at = frame_bytes_; at < n; at += frame_bytes_) {
      mem::Buffer next = pool_->get();
      const size_t len = std::min(frame_bytes_, n - at);
      if (!next || next.set_size(len) != 0) return false;
      std::memcpy(next.data(), p + at, len);
      if (frame.append(std::move(next)) != 0) return false;
    }
    return n <= frame_bytes_ || frame.set_size(frame_bytes_) == 0;
  }

  std::unique_ptr<mem::Pool> pool_;
  const size_t frame_bytes_;
  std::unique_ptr<Connection> conn_;
  std::string error_;
};

}  // namespace

std::string run(const std::string& text, size_t frame_bytes) {
  return Runner(frame_bytes).run(text);
}

}  // namespace ss::net::tcp::script
