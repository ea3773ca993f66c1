// The chat page's static files (web/ in the source tree), compiled into the
// binary by cmake/embed_web.cmake so that `submoe serve` needs no files at run
// time. GET / serves index.html; every file is also served at /NAME.
#pragma once

#include <span>
#include <string_view>

namespace submoe::serve {

struct WebAsset {
  std::string_view path;          // "/index.html", "/chat.js", ...
  std::string_view content_type;  // with charset
  std::string_view body;
};

std::span<const WebAsset> web_assets();

}  // namespace submoe::serve
