// Errors inside the template engine travel as exceptions from the point of failure
// (deep in an expression) to Template::parse / Template::render, which return them
// as Status values; nothing outside src/jinja sees an exception.
#pragma once

#include <stdexcept>
#include <string>

namespace submoe::jinja {

// A syntax error or a failed evaluation, with the template line it happened on.
class Error : public std::runtime_error {
 public:
  Error(int line, const std::string& message) : std::runtime_error(message), line_(line) {}
  int line() const { return line_; }

 private:
  int line_;
};

// raise_exception(message) called by the template itself: the template refuses
// its input (for example roles that do not alternate); the message is the
// template author's, reported as is.
class RaisedByTemplate : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace submoe::jinja
