// The checks before a custom-op plugin is dlopened in npuc's process (preload.hpp): its ELF structure, then a trial
// load in a child process (docs/custom-ops.md, "Loading").
#include "plugin/preload.hpp"

#include "plugin/plugin.hpp"

#include "support/file.hpp"
#include "support/sha256.hpp"

#include <fmt/format.h>

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>

namespace npuc::plugin::detail {

namespace {

constexpr unsigned char kElfClass = sizeof(void*) == 8 ? ELFCLASS64 : ELFCLASS32;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
constexpr unsigned char kElfData = ELFDATA2LSB;
#else
constexpr unsigned char kElfData = ELFDATA2MSB;
#endif
#if defined(__x86_64__)
constexpr int kElfMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr int kElfMachine = EM_AARCH64;
#elif defined(__i386__)
constexpr int kElfMachine = EM_386;
#elif defined(__arm__)
constexpr int kElfMachine = EM_ARM;
#elif defined(__riscv)
constexpr int kElfMachine = EM_RISCV;
#elif defined(__powerpc64__)
constexpr int kElfMachine = EM_PPC64;
#else
constexpr int kElfMachine = -1;  // (not checked)
#endif

/// Whether [offset, offset + count * size) lies within `file` bytes (no overflow).
bool within(uint64_t offset, uint64_t count, uint64_t size, uint64_t file) {
  if (offset > file) return false;
  if (size != 0 && count > (file - offset) / size) return false;
  return true;
}

const char* signalName(int sig) {
  switch (sig) {
    case SIGBUS: return "SIGBUS";
    case SIGSEGV: return "SIGSEGV";
    case SIGILL: return "SIGILL";
    case SIGFPE: return "SIGFPE";
    case SIGABRT: return "SIGABRT";
    case SIGKILL: return "SIGKILL";
    case SIGTRAP: return "SIGTRAP";
    case SIGSYS: return "SIGSYS";
    case SIGTERM: return "SIGTERM";
    default: return "a signal";
  }
}

/// How long a trial load may take (a loader that waits forever in the child, or a library whose initialisation
/// does, is refused after it).
constexpr auto kTrialTimeout = std::chrono::seconds(30);

/// SHA-256s of the libraries that loaded in a child process in this process's life: they load here directly.
struct TrialLoads {
  std::mutex mu;
  std::set<std::string> ok;
};
TrialLoads& trialLoads() {
  static TrialLoads* t = new TrialLoads;
  return *t;
}

}  // namespace

/// The ELF header and what it points at, against the file's size: a library cut short (a copy interrupted, a full
/// disk) has tables and segments past its end, and dlopen maps them — the loader's first touch of a page past the end
/// of the file is SIGBUS, which kills the process (the Python interpreter too). Everything dlopen maps or reads is
/// checked here first, so such a file is an error naming the rule it breaks.
void checkElf(const std::string& shown, const std::vector<uint8_t>& b) {
  auto bad = [&](const std::string& rule) {
    fail(ErrorCode::kInvalidInput, "custom op plugin '{}' is not a loadable shared library: {} (the file is truncated "
         "or corrupt; rebuild it with `npuc custom-op build`)", shown, rule);
  };
  const uint64_t size = b.size();
  if (size < EI_NIDENT) bad(fmt::format("its ELF identification is cut short ({} of {} bytes)", size, EI_NIDENT));
  if (b[EI_CLASS] != kElfClass)
    bad(fmt::format("it is a {}-bit ELF file, this npuc is {}-bit", b[EI_CLASS] == ELFCLASS32 ? 32 : b[EI_CLASS] == ELFCLASS64 ? 64 : 0,
                    sizeof(void*) * 8));
  if (b[EI_DATA] != kElfData) bad("its byte order is not this machine's");
  if (b[EI_VERSION] != EV_CURRENT) bad(fmt::format("ELF version {} (1 expected)", b[EI_VERSION]));
  using Ehdr = ElfW(Ehdr);
  using Phdr = ElfW(Phdr);
  using Shdr = ElfW(Shdr);
  if (size < sizeof(Ehdr)) bad(fmt::format("its ELF header is cut short ({} of {} bytes)", size, sizeof(Ehdr)));
  Ehdr eh;
  std::memcpy(&eh, b.data(), sizeof eh);
  if (eh.e_type != ET_DYN) bad(fmt::format("it is not a shared library (ELF type {}, a shared library is {})", eh.e_type, ET_DYN));
  if (kElfMachine >= 0 && eh.e_machine != kElfMachine)
    bad(fmt::format("it is built for another machine (ELF machine {}, this npuc runs on machine {})", eh.e_machine, kElfMachine));
  if (eh.e_ehsize != sizeof(Ehdr)) bad(fmt::format("its ELF header size is {} ({} expected)", eh.e_ehsize, sizeof(Ehdr)));
  // Program headers: what dlopen maps.
  if (eh.e_phnum == 0 || eh.e_phnum == PN_XNUM)
    bad(fmt::format("it has {} program headers", eh.e_phnum == 0 ? "no" : "an extended number of"));
  if (eh.e_phentsize != sizeof(Phdr))
    bad(fmt::format("its program header entries are {} bytes ({} expected)", eh.e_phentsize, sizeof(Phdr)));
  if (!within(eh.e_phoff, eh.e_phnum, sizeof(Phdr), size))
    bad(fmt::format("its program header table (offset {}, {} entries of {} bytes) lies past the end of the file ({} bytes)",
                    eh.e_phoff, eh.e_phnum, sizeof(Phdr), size));
  size_t loads = 0;
  for (size_t k = 0; k < eh.e_phnum; ++k) {
    Phdr ph;
    std::memcpy(&ph, b.data() + eh.e_phoff + k * sizeof(Phdr), sizeof ph);
    if (ph.p_type != PT_LOAD && ph.p_type != PT_DYNAMIC && ph.p_type != PT_INTERP && ph.p_type != PT_NOTE) continue;
    if (ph.p_type == PT_LOAD) {
      ++loads;
      if (ph.p_filesz > ph.p_memsz)
        bad(fmt::format("its loadable segment {} has more bytes in the file ({}) than in memory ({})", k, ph.p_filesz, ph.p_memsz));
    }
    if (!within(ph.p_offset, 1, ph.p_filesz, size))
      bad(fmt::format("its {} segment {} (offset {}, {} bytes) lies past the end of the file ({} bytes)",
                      ph.p_type == PT_LOAD ? "loadable" : ph.p_type == PT_DYNAMIC ? "dynamic" : "note or interpreter", k,
                      ph.p_offset, ph.p_filesz, size));
  }
  if (loads == 0) bad("it has no loadable segment");
  // Section headers (the loader does not need them, but a table past the end is a file cut short).
  if (eh.e_shoff == 0 && eh.e_shnum == 0) return;
  if (eh.e_shentsize != sizeof(Shdr))
    bad(fmt::format("its section header entries are {} bytes ({} expected)", eh.e_shentsize, sizeof(Shdr)));
  uint64_t shnum = eh.e_shnum;
  if (shnum == 0) {  // extended numbering: the count is section 0's size
    if (!within(eh.e_shoff, 1, sizeof(Shdr), size))
      bad(fmt::format("its section header table (offset {}) lies past the end of the file ({} bytes)", eh.e_shoff, size));
    Shdr s0;
    std::memcpy(&s0, b.data() + eh.e_shoff, sizeof s0);
    shnum = s0.sh_size;
  }
  if (!within(eh.e_shoff, shnum, sizeof(Shdr), size))
    bad(fmt::format("its section header table (offset {}, {} entries of {} bytes) lies past the end of the file ({} bytes)",
                    eh.e_shoff, shnum, sizeof(Shdr), size));
  for (uint64_t k = 0; k < shnum; ++k) {
    Shdr sh;
    std::memcpy(&sh, b.data() + eh.e_shoff + k * sizeof(Shdr), sizeof sh);
    if (sh.sh_type == SHT_NOBITS || sh.sh_type == SHT_NULL) continue;
    if (!within(sh.sh_offset, 1, sh.sh_size, size))
      bad(fmt::format("its section {} (offset {}, {} bytes) lies past the end of the file ({} bytes)", k, sh.sh_offset,
                      sh.sh_size, size));
  }
}

/// Loads the library in a child process first (fork; the child only calls dlopen, the entry point, and _exit): a
/// library that crashes the loader (a truncation the checks above cannot see, a corrupt relocation) or its own
/// initialisation kills the child, and the parent refuses it without ever mapping it. The child reports on a pipe
/// ('K', or 'E' and dlopen's message), so the outcome is known even where SIGCHLD is ignored.
void trialLoad(const std::string& shown, const std::filesystem::path& path, const std::string& sha) {
  TrialLoads& t = trialLoads();
  {
    std::lock_guard<std::mutex> lk(t.mu);
    if (t.ok.count(sha)) return;
  }
  const std::string p = path.string();  // (everything the child needs, made before fork)
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    fail(ErrorCode::kIo, "custom op plugin '{}': cannot create a pipe to load it in a child process first: {}", shown,
         std::strerror(errno));
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int e = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    fail(ErrorCode::kIo, "custom op plugin '{}': cannot fork to load it in a child process first: {}", shown, std::strerror(e));
  }
  if (pid == 0) {  // the child: dlopen, the entry point, a report, _exit (no destructors, no atexit, no flush)
    ::close(fds[0]);
    ::signal(SIGPIPE, SIG_IGN);
    // A crash ends the child by its signal, which the parent names: no handler of the process (a sanitizer's
    // included, which would report it and exit with a status instead) takes it.
    for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT}) ::signal(sig, SIG_DFL);
    void* h = ::dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* e = ::dlerror();
      char buf[1024] = "E";
      if (e) std::strncpy(buf + 1, e, sizeof buf - 2);
      [[maybe_unused]] ssize_t w = ::write(fds[1], buf, std::strlen(buf));
      ::_exit(1);
    }
    if (void* sym = ::dlsym(h, NPUC_CUSTOM_OP_ENTRY)) {
      try {
        (void)reinterpret_cast<npuc_custom_op_library_get_fn>(sym)();  // (its table is checked in the parent)
      } catch (...) {  // (the parent calls it again and reports the exception)
      }
    }
    [[maybe_unused]] ssize_t w = ::write(fds[1], "K", 1);
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string report;
  bool timed_out = false;
  const auto deadline = std::chrono::steady_clock::now() + kTrialTimeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd pf{fds[0], POLLIN, 0};
    const int r = ::poll(&pf, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (r < 0 && errno != EINTR) break;
    if (r <= 0) continue;
    char buf[1024];
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n > 0 && report.size() < 4096) report.append(buf, static_cast<size_t>(n));
    else if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) break;  // EOF: the child is gone
  }
  ::close(fds[0]);
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  pid_t w;
  while ((w = ::waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
  }
  const bool reaped = w == pid;  // (not where SIGCHLD is ignored: the pipe's report decides)
  if (timed_out)
    fail(ErrorCode::kInvalidInput, "custom op plugin '{}': loading it did not finish within {} s (npuc loads a new "
         "library in a child process first; its initialisation hangs there), so npuc did not load it", shown,
         kTrialTimeout.count());
  if (reaped && WIFSIGNALED(status))
    fail(ErrorCode::kInvalidInput, "custom op plugin '{}': the library crashed while loading (signal {}, {}): it is "
         "truncated or corrupt, or its initialisation crashes (npuc loads a new library in a child process first, and "
         "did not load this one)", shown, WTERMSIG(status), signalName(WTERMSIG(status)));
  if (!report.empty() && report[0] == 'E')
    fail(ErrorCode::kInvalidInput, "custom op plugin '{}' cannot be loaded as a shared library: {}", shown,
         report.size() > 1 ? report.substr(1) : std::string("dlopen failed"));
  if (report != "K" || (reaped && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)))
    fail(ErrorCode::kInvalidInput, "custom op plugin '{}': loading it in a child process failed ({}), so npuc did not "
         "load it", shown, reaped && WIFEXITED(status) ? fmt::format("exit status {}", WEXITSTATUS(status))
                                                        : std::string("no report from the child"));
  std::lock_guard<std::mutex> lk(t.mu);
  t.ok.insert(sha);
}

}  // namespace npuc::plugin::detail
