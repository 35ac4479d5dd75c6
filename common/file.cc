#include "common/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace semmoe {
namespace {

absl::Status ErrnoStatus(int err, absl::string_view what, const std::string& path) {
  std::string message = absl::StrCat(what, " ", path, ": ", std::strerror(err));
  switch (err) {
    case ENOENT:
      return absl::NotFoundError(message);
    case EACCES:
    case EPERM:
      return absl::PermissionDeniedError(message);
    default:
      return absl::InternalError(message);
  }
}

// Writes all of `contents` to `fd` (retrying short writes and EINTR).
absl::Status WriteAll(int fd, absl::string_view contents, const std::string& path) {
  size_t done = 0;
  while (done < contents.size()) {
    ssize_t n = write(fd, contents.data() + done, contents.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, "cannot write", path);
    }
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

const char* KindOf(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

absl::Status TooLarge(const std::string& path, uint64_t bytes, uint64_t max_bytes, bool at_least) {
  return absl::InvalidArgumentError(absl::StrCat(path, " holds ", at_least ? "more than " : "",
                                                 bytes, " bytes; the most read is ", max_bytes));
}

}  // namespace

absl::StatusOr<int> OpenInputFile(const std::string& path) {
  // O_NONBLOCK so that a FIFO with no writer does not block the open (reads then see EOF).
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return ErrnoStatus(errno, "cannot open", path);
  struct stat st;
  if (fstat(fd, &st) != 0) {
    const int err = errno;
    close(fd);
    return ErrnoStatus(err, "cannot stat", path);
  }
  if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode)) {
    close(fd);
    return absl::InvalidArgumentError(
        absl::StrCat(path, " is ", KindOf(st.st_mode), ", not a regular file or a pipe"));
  }
  const int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    const int err = errno;
    close(fd);
    return ErrnoStatus(err, "cannot set flags of", path);
  }
  return fd;
}

absl::StatusOr<std::string> ReadFile(const std::string& path, uint64_t max_bytes) {
  absl::StatusOr<int> opened = OpenInputFile(path);
  if (!opened.ok()) return opened.status();
  const int fd = *opened;
  struct stat st {};
  if (fstat(fd, &st) == 0 && static_cast<uint64_t>(st.st_size) > max_bytes) {
    close(fd);
    return TooLarge(path, static_cast<uint64_t>(st.st_size), max_bytes, false);
  }
  std::string out;
  if (st.st_size > 0) out.reserve(static_cast<size_t>(st.st_size));
  char buffer[1 << 16];
  while (true) {
    ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      close(fd);
      return ErrnoStatus(err, "cannot read", path);
    }
    if (n == 0) break;
    if (out.size() + static_cast<size_t>(n) > max_bytes) {
      close(fd);
      return TooLarge(path, max_bytes, max_bytes, true);
    }
    out.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  return out;
}

absl::StatusOr<std::string> ReadFlagFile(absl::string_view flag, const std::string& path,
                                         uint64_t max_bytes) {
  absl::StatusOr<std::string> text = ReadFile(path, max_bytes);
  if (!text.ok()) {
    return absl::Status(text.status().code(),
                        absl::StrCat("--", flag, ": ", text.status().message()));
  }
  return text;
}

absl::Status WriteFile(const std::string& path, absl::string_view contents) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoStatus(errno, "cannot create", path);
  if (absl::Status written = WriteAll(fd, contents, path); !written.ok()) {
    close(fd);
    return written;
  }
  if (close(fd) != 0) return ErrnoStatus(errno, "cannot close", path);
  return absl::OkStatus();
}

absl::Status WriteFileAtomically(const std::string& path, absl::string_view contents) {
  std::string tmp = absl::StrCat(path, ".tmp.", getpid());
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoStatus(errno, "cannot create", tmp);
  if (absl::Status written = WriteAll(fd, contents, tmp); !written.ok()) {
    close(fd);
    unlink(tmp.c_str());
    return written;
  }
  if (fsync(fd) != 0 || close(fd) != 0) {
    int err = errno;
    unlink(tmp.c_str());
    return ErrnoStatus(err, "cannot flush", tmp);
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    unlink(tmp.c_str());
    return ErrnoStatus(err, "cannot rename into", path);
  }
  return absl::OkStatus();
}

std::string BaseName(absl::string_view path) {
  while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  const size_t slash = path.rfind('/');
  return std::string(slash == absl::string_view::npos ? path : path.substr(slash + 1));
}

std::string JoinPath(absl::string_view a, absl::string_view b) {
  if (a.empty() || (!b.empty() && b[0] == '/')) return std::string(b);
  if (a.back() == '/') return absl::StrCat(a, b);
  return absl::StrCat(a, "/", b);
}

std::string UserPath(const std::string& path) {
  const char* cwd = std::getenv("BUILD_WORKING_DIRECTORY");
  if (path.empty() || path[0] == '/' || cwd == nullptr) return path;
  return JoinPath(cwd, path);
}

}  // namespace semmoe
