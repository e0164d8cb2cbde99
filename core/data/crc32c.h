// CRC-32C (Castagnoli), the checksum of checkpoint manifests and of
// TensorBoard's TFRecord framing.
#ifndef TFM_CORE_DATA_CRC32C_H_
#define TFM_CORE_DATA_CRC32C_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tfm {

// Extends `crc` (the checksum of the bytes before `data`; 0 for none) over
// `data`, so a large file can be checksummed in pieces.
uint32_t ExtendCrc32c(uint32_t crc, absl::string_view data);
inline uint32_t Crc32c(absl::string_view data) { return ExtendCrc32c(0, data); }

// TFRecord's masked form: a CRC of data that itself holds CRCs is a weak
// check, so TensorFlow rotates and offsets it.
uint32_t MaskCrc32c(uint32_t crc);

// The checksum of bytes [offset, offset + length) of a file, read in pieces
// with pread so that a file of any size needs a fixed amount of memory (and,
// unlike reading through a mapping, adds nothing to resident memory).
// length kToEnd: up to the end of the file. A file that ends before
// offset + length is DataLoss; one that cannot be opened, NotFound.
inline constexpr uint64_t kToEnd = ~uint64_t{0};
absl::StatusOr<uint32_t> FileRangeCrc32c(const std::string& path, uint64_t offset,
                                         uint64_t length);

// The checksum of a whole file (a checkpoint's, of any size).
inline absl::StatusOr<uint32_t> FileCrc32c(const std::string& path) {
  return FileRangeCrc32c(path, 0, kToEnd);
}

}  // namespace tfm

#endif  // TFM_CORE_DATA_CRC32C_H_
