#include "core/prov/verbs/msg_send.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/base/log.h"

namespace ss::prov::verbs {

namespace {
// A receive's wr_id carries its slot in bits 32-62 (the engine's ids are
// 32-bit; bit 63 is the endpoint's receive tag).
constexpr int kSlotShift = 32;
constexpr uint64_t kSlotMask = 0x7FFFFFFFull;
constexpr size_t kPage = 4096;
}  // namespace

MsgSend::~MsgSend() {
  if (mr_ && ibv_dereg_mr(mr_)) SS_WARN("verbs: ibv_dereg_mr: %s", strerror(errno));
  free(slots_);
}

int MsgSend::init(ibv_pd* pd, uint32_t slots, bool fence_reads_byte) {
  fence_reads_byte_ = fence_reads_byte;
  // Page-aligned, so fork-safe registration (MADV_DONTFORK) touches nothing
  // else; one slot more, the fence's sink.
  size_t len = ((slots + 1) * sizeof(uint32_t) + kPage - 1) & ~(kPage - 1);
  void* p = nullptr;
  if (posix_memalign(&p, kPage, len)) return -ENOMEM;
  memset(p, 0, len);
  slots_ = static_cast<uint32_t*>(p);
  if (!(mr_ = ibv_reg_mr(pd, slots_, len, int{IBV_ACCESS_LOCAL_WRITE})))
    return errno ? -errno : -ENOMEM;
  count_ = slots;
  return 0;
}

int MsgSend::post_recv(ibv_qp* qp, uint64_t wr_id) {
  // Receives complete in the order they were posted and at most `count_`
  // are outstanding, so a slot is free again by the time it comes round.
  const uint32_t slot = next_;
  next_ = next_ + 1 == count_ ? 0 : next_ + 1;
  ibv_sge sge{reinterpret_cast<uint64_t>(&slots_[slot]), sizeof(uint32_t), mr_->lkey};
  ibv_recv_wr rw{};
  rw.wr_id = (wr_id & ~(kSlotMask << kSlotShift)) | (static_cast<uint64_t>(slot) << kSlotShift);
  rw.sg_list = &sge;
  rw.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  return ibv_post_recv(qp, &rw, &bad);
}

bool MsgSend::message(const ibv_wc& wc, uint32_t* msg) const {
  const uint64_t slot = (wc.wr_id >> kSlotShift) & kSlotMask;
  if (wc.opcode != IBV_WC_RECV || wc.byte_len != sizeof(uint32_t) || slot >= count_) return false;
  memcpy(msg, &slots_[slot], sizeof *msg);  // the sender's (host) byte order
  return true;
}

uint64_t MsgSend::recv_wr_id(uint64_t raw) { return raw & ~(kSlotMask << kSlotShift); }

int MsgSend::post(ibv_qp* qp, ibv_send_wr* write, uint64_t wr_id, uint32_t msg) {
  ibv_sge sge{reinterpret_cast<uint64_t>(&msg), sizeof msg, 0};
  ibv_send_wr send{};
  send.wr_id = wr_id;
  send.opcode = IBV_WR_SEND;
  send.sg_list = &sge;
  send.num_sge = 1;
  send.send_flags = IBV_SEND_INLINE;  // `msg` lives on this stack frame
  ibv_send_wr* first = &send;
  if (write && write->num_sge) {
    wrote_ = true;
    last_write_addr_ = write->wr.rdma.remote_addr;
    last_write_rkey_ = write->wr.rdma.rkey;
    write->wr_id |= kWriteHalfTag;
    write->next = &send;
    first = write;
  }
  ibv_send_wr* bad = nullptr;
  return ibv_post_send(qp, first, &bad);
}

int MsgSend::post_fence(ibv_qp* qp) const {
  if (fence_reads_byte_ && !wrote_) return ENOENT;
  // One SGE (siw wants exactly one for a read sink), the spare slot; for
  // zero bytes neither side checks keys.
  const uint32_t bytes = fence_reads_byte_ ? 1 : 0;
  ibv_sge sge{reinterpret_cast<uint64_t>(&slots_[count_]), bytes, mr_->lkey};
  ibv_send_wr rd{};
  rd.wr_id = kFenceTag;
  rd.opcode = IBV_WR_RDMA_READ;
  rd.sg_list = &sge;
  rd.num_sge = 1;
  if (bytes) {
    rd.wr.rdma.remote_addr = last_write_addr_;
    rd.wr.rdma.rkey = last_write_rkey_;
  }
  rd.send_flags = IBV_SEND_SIGNALED;
  ibv_send_wr* bad = nullptr;
  return ibv_post_send(qp, &rd, &bad);
}

int MsgSend::post_nudge(ibv_qp* qp) const {
  ibv_send_wr wr{};
  wr.wr_id = kNudgeTag;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED;
  if (wrote_) {
    wr.wr.rdma.remote_addr = last_write_addr_;
    wr.wr.rdma.rkey = last_write_rkey_;
  }
  ibv_send_wr* bad = nullptr;
  return ibv_post_send(qp, &wr, &bad);
}

}  // namespace ss::prov::verbs
