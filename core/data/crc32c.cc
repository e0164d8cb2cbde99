#include "core/data/crc32c.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"

namespace tfm {
namespace {

constexpr uint32_t kCastagnoliReversed = 0x82f63b78;

// Slicing-by-8 tables: table[k][b] is the CRC of byte b followed by k zero
// bytes, which lets the loop consume 8 bytes per step (checkpoints are
// hundreds of megabytes; a byte-at-a-time loop would dominate saving).
using Tables = std::array<std::array<uint32_t, 256>, 8>;

Tables MakeTables() {
  Tables tables;
  for (uint32_t byte = 0; byte < 256; ++byte) {
    uint32_t crc = byte;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1) ? kCastagnoliReversed : 0);
    tables[0][byte] = crc;
  }
  for (int k = 1; k < 8; ++k) {
    for (int byte = 0; byte < 256; ++byte) {
      const uint32_t previous = tables[k - 1][byte];
      tables[k][byte] = (previous >> 8) ^ tables[0][previous & 0xff];
    }
  }
  return tables;
}

const Tables& CrcTables() {
  static const Tables tables = MakeTables();
  return tables;
}

}  // namespace

uint32_t ExtendCrc32c(uint32_t crc, absl::string_view data) {
  const Tables& t = CrcTables();
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  size_t n = data.size();
  crc = ~crc;
  while (n >= 8) {
    const uint32_t low =
        crc ^ (uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24);
    crc = t[7][low & 0xff] ^ t[6][(low >> 8) & 0xff] ^ t[5][(low >> 16) & 0xff] ^ t[4][low >> 24] ^
          t[3][p[4]] ^ t[2][p[5]] ^ t[1][p[6]] ^ t[0][p[7]];
    p += 8;
    n -= 8;
  }
  while (n-- > 0) crc = (crc >> 8) ^ t[0][(crc ^ *p++) & 0xff];
  return ~crc;
}

uint32_t MaskCrc32c(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

absl::StatusOr<uint32_t> FileRangeCrc32c(const std::string& path, uint64_t offset,
                                         uint64_t length) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::NotFoundError(absl::StrCat("cannot open ", path, ": ", std::strerror(errno)));
  }
  posix_fadvise(fd, offset, length == kToEnd ? 0 : length, POSIX_FADV_SEQUENTIAL);
  std::vector<char> buffer(size_t{1} << 20);
  uint32_t crc = 0;
  while (length > 0) {
    const ssize_t got =
        pread(fd, buffer.data(), std::min<uint64_t>(buffer.size(), length), offset);
    if (got < 0 && errno == EINTR) continue;
    if (got == 0 && length == kToEnd) break;
    if (got <= 0) {
      const std::string why = got < 0 ? std::strerror(errno) : "the file ends there";
      close(fd);
      return absl::DataLossError(
          absl::StrCat("cannot read ", path, " at byte ", offset, ": ", why));
    }
    crc = ExtendCrc32c(crc, absl::string_view(buffer.data(), got));
    offset += got;
    if (length != kToEnd) length -= got;
  }
  close(fd);
  return crc;
}

}  // namespace tfm
