#include "tests/fake_kernel/core_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <variant>

#include "tests/fake_kernel/scoped_fd.h"

namespace coredumpd::fake_kernel {

namespace {

struct BufferCore {
  std::vector<std::byte> bytes;
};

struct FileCore {
  std::string path;
  ScopedFd fd;
  std::uint64_t size = 0;
};

struct PatternCore {
  std::uint64_t size = 0;
  std::uint64_t data_page_stride = 0;
  std::uint32_t page_size = 4096;
  std::uint8_t seed = 0;
  bool data_last_page = false;

  [[nodiscard]] bool is_data_page(std::uint64_t page) const {
    if (data_page_stride == 0 || page % data_page_stride == 0) return true;
    return data_last_page && size > 0 && page == (size - 1) / page_size;
  }
};

}  // namespace

struct CoreSource::Impl {
  std::variant<BufferCore, FileCore, PatternCore> core;
};

CoreSource::CoreSource() : impl_(std::make_shared<Impl>(Impl{BufferCore{}})) {}

CoreSource::CoreSource(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}

CoreSource CoreSource::from_buffer(std::vector<std::byte> bytes) {
  return CoreSource(std::make_shared<Impl>(Impl{BufferCore{std::move(bytes)}}));
}

std::optional<CoreSource> CoreSource::from_file(const std::string& path, std::string& error) {
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    error = "cannot open core file " + path + ": " + std::strerror(errno);
    return std::nullopt;
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    error = "cannot stat core file " + path + ": " + std::strerror(errno);
    return std::nullopt;
  }
  FileCore file{path, std::move(fd), static_cast<std::uint64_t>(st.st_size)};
  return CoreSource(std::make_shared<Impl>(Impl{std::move(file)}));
}

CoreSource CoreSource::pattern(std::uint64_t size, std::uint64_t data_page_stride,
                               std::uint32_t page_size, std::uint8_t seed, bool data_last_page) {
  PatternCore p{size, data_page_stride, page_size == 0 ? 4096 : page_size, seed, data_last_page};
  return CoreSource(std::make_shared<Impl>(Impl{p}));
}

std::byte CoreSource::pattern_byte(std::uint64_t offset, std::uint8_t seed) {
  // A cheap mix of the offset: consecutive bytes differ, and the value is in 1..255.
  const std::uint64_t mixed = (offset * 0x9E3779B97F4A7C15ULL) >> 56;
  return static_cast<std::byte>((mixed ^ seed) % 255 + 1);
}

std::uint64_t CoreSource::size() const {
  return std::visit(
      [](const auto& c) -> std::uint64_t {
        using T = std::decay_t<decltype(c)>;
        if constexpr (std::is_same_v<T, BufferCore>) return c.bytes.size();
        else return c.size;
      },
      impl_->core);
}

bool CoreSource::read(std::uint64_t offset, std::span<std::byte> out, std::string& error) const {
  const std::uint64_t total = size();
  if (offset > total || out.size() > total - offset) {
    error = "read of " + std::to_string(out.size()) + " bytes at " + std::to_string(offset) +
            " is outside the " + std::to_string(total) + "-byte core";
    return false;
  }
  if (const auto* b = std::get_if<BufferCore>(&impl_->core)) {
    std::copy_n(b->bytes.begin() + static_cast<std::ptrdiff_t>(offset), out.size(), out.begin());
    return true;
  }
  if (const auto* f = std::get_if<FileCore>(&impl_->core)) {
    std::size_t done = 0;
    while (done < out.size()) {
      const ssize_t n = ::pread(f->fd.get(), out.data() + done, out.size() - done,
                                static_cast<off_t>(offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        error = "cannot read core file " + f->path + ": " +
                (n == 0 ? std::string("file shrank") : std::string(std::strerror(errno)));
        return false;
      }
      done += static_cast<std::size_t>(n);
    }
    return true;
  }
  const auto& p = std::get<PatternCore>(impl_->core);
  for (std::size_t i = 0; i < out.size(); ++i) {
    const std::uint64_t at = offset + i;
    out[i] = p.is_data_page(at / p.page_size) ? pattern_byte(at, p.seed) : std::byte{0};
  }
  return true;
}

std::optional<std::vector<std::byte>> CoreSource::materialize(std::string& error) const {
  std::vector<std::byte> all(static_cast<std::size_t>(size()));
  if (!read(0, all, error)) return std::nullopt;
  return all;
}

std::string CoreSource::describe() const {
  return std::visit(
      [](const auto& c) -> std::string {
        using T = std::decay_t<decltype(c)>;
        if constexpr (std::is_same_v<T, BufferCore>) return "buffer:" + std::to_string(c.bytes.size());
        else if constexpr (std::is_same_v<T, FileCore>) return "file:" + c.path;
        else return "pattern:" + std::to_string(c.size) + "/" + std::to_string(c.data_page_stride);
      },
      impl_->core);
}

}  // namespace coredumpd::fake_kernel
