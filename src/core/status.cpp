#include "submoe/core/status.h"

namespace submoe {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk: return "ok";
    case ErrorCode::kInvalidArgument: return "invalid argument";
    case ErrorCode::kCorruptData: return "corrupt data";
    case ErrorCode::kNotFound: return "not found";
    case ErrorCode::kIoError: return "I/O error";
    case ErrorCode::kUnsupported: return "unsupported";
    case ErrorCode::kNumerical: return "numerical error";
    case ErrorCode::kInternal: return "internal error";
    case ErrorCode::kUnavailable: return "unavailable";
  }
  return "unknown error";
}

std::string Status::to_string() const {
  if (is_ok()) return "ok";
  return std::string(error_code_name(code_)) + ": " + message_;
}

Status Status::with_context(const std::string& context) const {
  if (is_ok()) return *this;
  return Status(code_, context + ": " + message_);
}

}  // namespace submoe
