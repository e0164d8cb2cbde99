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

// The checksum of a whole file, read in pieces so a checkpoint of any size
// needs a fixed amount of memory.
absl::StatusOr<uint32_t> FileCrc32c(const std::string& path);

}  // namespace tfm

#endif  // TFM_CORE_DATA_CRC32C_H_
