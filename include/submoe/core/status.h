// Errors are values at the library boundary: functions that can fail on bad input
// return Status or Result<T> with a message naming the file, tensor or field.
// The CLI turns them into exit codes; the library never aborts on bad input.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace submoe {

enum class ErrorCode {
  kOk = 0,
  kInvalidArgument,  // caller passed something malformed
  kCorruptData,      // a file or buffer violates its format
  kNotFound,
  kIoError,
  kUnsupported,      // well-formed but not handled (e.g. unknown architecture)
  kNumerical,        // NaN/Inf, failed factorization
  kInternal,
  kUnavailable,      // busy (a queue or slot limit is reached); the same call may succeed later
};

const char* error_code_name(ErrorCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return {}; }
  bool is_ok() const { return code_ == ErrorCode::kOk; }
  explicit operator bool() const { return is_ok(); }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "corrupt data: <message>"
  std::string to_string() const;

  // Prefixes context, e.g. status.with_context("tensor 'w1'").
  Status with_context(const std::string& context) const;

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

inline Status invalid_argument(std::string m) { return {ErrorCode::kInvalidArgument, std::move(m)}; }
inline Status corrupt_data(std::string m) { return {ErrorCode::kCorruptData, std::move(m)}; }
inline Status not_found(std::string m) { return {ErrorCode::kNotFound, std::move(m)}; }
inline Status io_error(std::string m) { return {ErrorCode::kIoError, std::move(m)}; }
inline Status unsupported(std::string m) { return {ErrorCode::kUnsupported, std::move(m)}; }
inline Status numerical_error(std::string m) { return {ErrorCode::kNumerical, std::move(m)}; }
inline Status internal_error(std::string m) { return {ErrorCode::kInternal, std::move(m)}; }
inline Status unavailable(std::string m) { return {ErrorCode::kUnavailable, std::move(m)}; }

// A value or an error. Accessing value() of an error is an internal bug (asserted).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    assert(!std::get<Status>(v_).is_ok() && "Result built from an OK status");
  }

  bool is_ok() const { return std::holds_alternative<T>(v_); }
  explicit operator bool() const { return is_ok(); }
  const Status& status() const {
    static const Status kOk;
    return is_ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { assert(is_ok()); return std::get<T>(v_); }
  const T& value() const& { assert(is_ok()); return std::get<T>(v_); }
  T&& value() && { assert(is_ok()); return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace submoe

// Propagate an error Status from an expression returning Status.
#define SUBMOE_RETURN_IF_ERROR(expr)                 \
  do {                                               \
    ::submoe::Status submoe_status_ = (expr);        \
    if (!submoe_status_.is_ok()) return submoe_status_; \
  } while (0)

#define SUBMOE_CONCAT_INNER_(a, b) a##b
#define SUBMOE_CONCAT_(a, b) SUBMOE_CONCAT_INNER_(a, b)
// auto x = ...; from an expression returning Result<T>, propagating its error.
#define SUBMOE_ASSIGN_OR_RETURN(lhs, expr)                                   \
  auto SUBMOE_CONCAT_(submoe_result_, __LINE__) = (expr);                    \
  if (!SUBMOE_CONCAT_(submoe_result_, __LINE__).is_ok())                     \
    return SUBMOE_CONCAT_(submoe_result_, __LINE__).status();                \
  lhs = std::move(SUBMOE_CONCAT_(submoe_result_, __LINE__)).value()
