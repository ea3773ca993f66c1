#include "serve/connection_watch.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace submoe::serve {
namespace {

// "ip:port" of the socket's peer, numeric as httplib prints it; "" when `fd` is
// not a connected socket.
std::string peer_key(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return "";
  char host[NI_MAXHOST], port[NI_MAXSERV];
  if (getnameinfo(reinterpret_cast<sockaddr*>(&addr), len, host, sizeof(host), port, sizeof(port),
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return "";
  std::string key = host;
  key.push_back(':');
  key.append(port);
  return key;
}

}  // namespace

int find_client_socket(const std::string& ip, int port) {
  std::string want = ip;
  want.push_back(':');
  want.append(std::to_string(port));
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd", ec)) {
    char* end = nullptr;
    const std::string name = entry.path().filename().string();
    const long fd = std::strtol(name.c_str(), &end, 10);
    if (end == name.c_str() || *end != '\0' || fd < 0) continue;
    if (peer_key(static_cast<int>(fd)) == want) return static_cast<int>(fd);
  }
  return -1;
}

bool client_gone(int fd) {
  pollfd p{};
  p.fd = fd;
  // POLLRDHUP: the peer shut its side (a closed curl, a killed client). A client
  // that half-closes on purpose and still reads is counted as gone; HTTP/1.1
  // clients do not do that.
  p.events = POLLIN | POLLRDHUP;
  if (::poll(&p, 1, 0) <= 0) return false;
  if (p.revents & (POLLERR | POLLHUP | POLLNVAL | POLLRDHUP)) return true;
  if (p.revents & POLLIN) {
    char byte;
    const ssize_t n = recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
  }
  return false;
}

}  // namespace submoe::serve
