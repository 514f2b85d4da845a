#include "core/prov/xdp/xdp_family.h"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>

#include "core/base/proc_stat.h"

namespace ss::prov::xdp {

namespace {

size_t page_bytes() {
  const size_t pg = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (sizeof(FamilyPage) + pg - 1) / pg * pg;
}

int map_fd(int fd, FamilyPage** out) {
  void* p = mmap(nullptr, page_bytes(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return -errno;
  *out = static_cast<FamilyPage*>(p);
  return 0;
}

// Exited: no such process, or a zombie (its parent has not reaped it).
bool gone(pid_t pid) {
  if (pid <= 0) return false;
  ProcStat st;
  if (!read_proc_stat(pid, &st)) return kill(pid, 0) != 0 && errno == ESRCH;
  return st.state == 'Z' || st.state == 'X';
}

}  // namespace

int family_create(int* fd, FamilyPage** out) {
  const int m = memfd_create("ss-xdp-family", MFD_CLOEXEC);
  if (m < 0) return -errno;
  if (ftruncate(m, static_cast<off_t>(page_bytes())) < 0) {
    const int err = -errno;
    close(m);
    return err;
  }
  FamilyPage* p = nullptr;
  if (const int err = map_fd(m, &p)) {
    close(m);
    return err;
  }
  pthread_mutexattr_t a;
  pthread_mutexattr_init(&a);
  pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
  pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
  for (FamilyPage::Lock& l : p->fill) pthread_mutex_init(&l.mu, &a);
  pthread_mutexattr_destroy(&a);
  p->slot_pid[0].store(getpid(), std::memory_order_relaxed);
  *fd = m;
  *out = p;
  return 0;
}

int family_map(int fd, FamilyPage** out) { return fd < 0 ? -EBADF : map_fd(fd, out); }

void family_unmap(FamilyPage* p) {
  if (p) munmap(p, page_bytes());
}

int family_claim_slot(FamilyPage* p, pid_t pid) {
  for (int s = 1; s < SS_MAX_SLOTS; s++) {
    pid_t holder = p->slot_pid[s].load(std::memory_order_acquire);
    if (holder != 0 && !gone(holder)) continue;
    if (p->slot_pid[s].compare_exchange_strong(holder, pid, std::memory_order_acq_rel)) return s;
  }
  return -ENOSPC;
}

bool family_slot_alive(const FamilyPage* p, int slot) {
  if (slot < 0 || slot >= SS_MAX_SLOTS) return false;
  const pid_t pid = p->slot_pid[slot].load(std::memory_order_acquire);
  return pid != 0 && !gone(pid);
}

void family_release_slot(FamilyPage* p, int slot, pid_t pid) {
  if (slot <= 0 || slot >= SS_MAX_SLOTS) return;
  p->slot_pid[slot].compare_exchange_strong(pid, 0, std::memory_order_acq_rel);
}

void family_lock_fill(FamilyPage* p, uint32_t queue) {
  pthread_mutex_t* mu = &p->fill[queue % SS_MAX_QUEUES].mu;
  if (pthread_mutex_lock(mu) == EOWNERDEAD) pthread_mutex_consistent(mu);
}

void family_unlock_fill(FamilyPage* p, uint32_t queue) {
  pthread_mutex_unlock(&p->fill[queue % SS_MAX_QUEUES].mu);
}

}  // namespace ss::prov::xdp
