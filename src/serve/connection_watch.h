// Whether the client of a request is still connected, for handlers that answer
// with one body at the end (non-streaming completions): cpp-httplib 0.11 tells a
// handler nothing about its connection (and applies its socket-options hook to
// the listening socket only), so a handler finds its own socket among the
// process's open descriptors by the peer address httplib wrote into
// Request::remote_addr and remote_port. While the handler runs, httplib keeps
// that connection open, so the descriptor stays the handler's.
#pragma once

#include <string>

namespace submoe::serve {

// The connected socket whose peer is ip:port (numeric, as httplib prints it), or -1.
int find_client_socket(const std::string& ip, int port);

// True when the peer has closed, shut down its side of, or reset the connection;
// pending request bytes (a pipelined request) do not count.
bool client_gone(int fd);

}  // namespace submoe::serve
