#pragma once
// Errors are values with a reason a person can act on (design note 8).
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>

namespace fsaudit {

// What a caller may act on besides the message a person reads: code decides on the kind, never on
// the message's words (which are free to change).
enum class ErrorKind {
  failed,         // anything else: the message says what
  refused,        // a safety check said no, and nothing was changed
  in_use,         // held by someone else: a port, a device
  not_installed,  // the tool this needs is not on the host
};

struct Error {
  std::string message;
  ErrorKind kind = ErrorKind::failed;
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}
  Result(Error e) : v_(std::move(e)) {}
  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return checked(); }
  const T& value() const& { return const_cast<Result*>(this)->checked(); }
  T&& value() && { return std::move(checked()); }
  T* operator->() { return &checked(); }
  const T* operator->() const { return &const_cast<Result*>(this)->checked(); }
  T& operator*() { return checked(); }
  const T& operator*() const { return const_cast<Result*>(this)->checked(); }
  const std::string& error() const { return std::get<1>(v_).message; }
  ErrorKind kind() const { return std::get<1>(v_).kind; }
  T value_or(T fallback) const { return ok() ? std::get<0>(v_) : fallback; }

 private:
  T& checked() {
    if (!ok()) throw std::logic_error("Result has no value: " + std::get<1>(v_).message);
    return std::get<0>(v_);
  }
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error e) : err_(std::move(e.message)), kind_(e.kind), failed_(true) {}
  bool ok() const { return !failed_; }
  explicit operator bool() const { return ok(); }
  const std::string& error() const { return err_; }
  ErrorKind kind() const { return kind_; }

 private:
  std::string err_;
  ErrorKind kind_ = ErrorKind::failed;
  bool failed_ = false;
};

inline Error err(std::string message, ErrorKind kind = ErrorKind::failed) { return Error{std::move(message), kind}; }
// A failed result's error with `context` in front of its message, keeping its kind.
template <class R>
Error err_in(const std::string& context, const R& failed) {
  return Error{context + failed.error(), failed.kind()};
}

}  // namespace fsaudit
