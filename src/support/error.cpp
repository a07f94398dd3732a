// Error type and exit-status policy.
#include "support/error.hpp"

namespace npuc {

const char* errorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "invalid argument";
    case ErrorCode::kInvalidInput: return "invalid input";
    case ErrorCode::kUnsupported: return "unsupported";
    case ErrorCode::kIo: return "i/o error";
    case ErrorCode::kInternal: return "internal error";
  }
  return "error";
}

int exitStatusFor(ErrorCode code) { return code == ErrorCode::kInternal ? 3 : 2; }

Error::Error(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) { rebuild(); }

Error& Error::addContext(std::string ctx) {
  if (!ctx.empty()) context_.push_back(std::move(ctx));
  rebuild();
  return *this;
}

void Error::rebuild() {
  full_.clear();
  for (auto it = context_.rbegin(); it != context_.rend(); ++it) {
    full_ += *it;
    full_ += ": ";
  }
  full_ += message_;
}

void throwError(ErrorCode code, std::string message) { throw Error(code, std::move(message)); }

}  // namespace npuc
