// npuc::Error — the one error type of the compiler side, public so API users can catch it.
//
// An Error carries a code (which decides the process exit status), the user-facing message, and context
// added while the error unwinds (file, node, field), outermost first when printed:
//   "model.onnx: node 'conv1' (Conv): attribute 'strides': expected 2 values, got 3"
#pragma once

#include <exception>
#include <string>
#include <vector>

namespace npuc {

enum class ErrorCode {
  kInvalidArgument,  // bad command line or API argument
  kInvalidInput,     // malformed or inconsistent input file (model, tensor, YAML, package)
  kUnsupported,      // well-formed input that npuc does not support (op, opset, dtype)
  kIo,               // file system failure
  kInternal,         // a bug in npuc
};

const char* errorCodeName(ErrorCode code);

/// Process exit status for an error: 2 for anything the user can fix in their input, 3 for internal errors.
int exitStatusFor(ErrorCode code);

class Error : public std::exception {
 public:
  Error(ErrorCode code, std::string message);

  ErrorCode code() const { return code_; }
  /// The innermost message, without context.
  const std::string& message() const { return message_; }
  /// Context entries, innermost first.
  const std::vector<std::string>& context() const { return context_; }

  /// Adds an outer context entry ("file.onnx", "node 'x' (Conv)", …) and returns *this for rethrow.
  Error& addContext(std::string ctx);

  const char* what() const noexcept override { return full_.c_str(); }

 private:
  void rebuild();
  ErrorCode code_;
  std::string message_;
  std::vector<std::string> context_;
  std::string full_;
};

}  // namespace npuc
