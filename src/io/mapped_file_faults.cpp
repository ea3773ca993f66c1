#include "submoe/io/mapped_file_faults.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>

namespace submoe::io {
namespace {

constexpr int kSlots = 1024;
constexpr size_t kPathBytes = 1024;

// A slot is published by storing `size` last (release) and read by the
// handler with acquire; unregistering clears `size` first.
struct Slot {
  std::atomic<uintptr_t> base{0};
  std::atomic<size_t> size{0};
  char path[kPathBytes] = {0};
};

Slot g_slots[kSlots];
std::mutex g_register_mutex;
std::atomic<bool> g_installed{false};

void write_all(const char* s, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(STDERR_FILENO, s, n);
    if (w <= 0) return;
    s += w;
    n -= static_cast<size_t>(w);
  }
}
void write_str(const char* s) { write_all(s, std::strlen(s)); }
void write_u64(uint64_t v) {
  char buf[24];
  int i = 23;
  buf[i] = 0;
  do {
    buf[--i] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  write_str(buf + i);
}

void on_sigbus(int sig, siginfo_t* info, void*) {
  const auto addr = reinterpret_cast<uintptr_t>(info->si_addr);
  for (Slot& s : g_slots) {
    const size_t size = s.size.load(std::memory_order_acquire);
    const uintptr_t base = s.base.load(std::memory_order_relaxed);
    if (size == 0 || addr < base || addr - base >= size) continue;
    write_str("submoe: error: ");
    write_str(s.path);
    write_str(" changed while in use: byte ");
    write_u64(addr - base);
    write_str(" is no longer in the file (truncated or rewritten in place?); stopped without writing anything\n");
    ::_exit(1);
  }
  // Not ours: the default action (terminate with a core dump).
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

}  // namespace

void install_mapped_file_fault_handler() {
  if (g_installed.exchange(true)) return;
  struct sigaction sa {};
  sa.sa_sigaction = on_sigbus;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGBUS, &sa, nullptr);
}

int register_mapping(const void* base, size_t size, const std::string& path) {
  std::lock_guard<std::mutex> lock(g_register_mutex);
  for (int i = 0; i < kSlots; ++i) {
    Slot& s = g_slots[i];
    if (s.size.load(std::memory_order_relaxed) != 0) continue;
    const size_t n = std::min(path.size(), kPathBytes - 1);
    std::memcpy(s.path, path.data(), n);
    s.path[n] = 0;
    s.base.store(reinterpret_cast<uintptr_t>(base), std::memory_order_relaxed);
    s.size.store(size, std::memory_order_release);
    return i;
  }
  return -1;
}

void unregister_mapping(int slot) {
  if (slot < 0 || slot >= kSlots) return;
  std::lock_guard<std::mutex> lock(g_register_mutex);
  g_slots[slot].size.store(0, std::memory_order_release);
}

}  // namespace submoe::io
