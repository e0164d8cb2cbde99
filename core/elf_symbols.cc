#include "core/elf_symbols.h"

#include <elf.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace tfm {
namespace {

// A T copied from `bytes` at `offset`, or false when it would run past the
// end (a truncated or damaged file).
template <typename T>
bool ReadAt(const std::string& bytes, uint64_t offset, T* out) {
  if (offset > bytes.size() || bytes.size() - offset < sizeof(T)) return false;
  std::memcpy(out, bytes.data() + offset, sizeof(T));
  return true;
}

absl::Status Damaged(const std::string& path, const std::string& what) {
  return absl::FailedPreconditionError(
      absl::StrCat("'", path, "' is not a valid shared library: ", what));
}

}  // namespace

absl::StatusOr<uint64_t> ReadExportedUint64(const std::string& path, const std::string& symbol) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return absl::FailedPreconditionError(absl::StrCat("cannot read '", path, "'"));
  std::ostringstream contents;
  contents << file.rdbuf();
  const std::string bytes = contents.str();

  Elf64_Ehdr header;
  if (!ReadAt(bytes, 0, &header) || std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0) {
    return Damaged(path, "no ELF header");
  }
  constexpr unsigned char kHostByteOrder =
      __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? ELFDATA2LSB : ELFDATA2MSB;
  if (header.e_ident[EI_CLASS] != ELFCLASS64 || header.e_ident[EI_DATA] != kHostByteOrder) {
    return Damaged(path, "not a 64-bit ELF file of this machine's byte order");
  }
  if (header.e_shentsize != sizeof(Elf64_Shdr)) return Damaged(path, "odd section header size");
  auto section = [&](uint64_t index, Elf64_Shdr* out) {
    return index < header.e_shnum &&
           ReadAt(bytes, header.e_shoff + index * sizeof(Elf64_Shdr), out);
  };

  // The dynamic symbol table holds exactly what the library exports.
  Elf64_Shdr symbols{};
  bool found_table = false;
  for (uint64_t i = 0; i < header.e_shnum && !found_table; ++i) {
    if (!section(i, &symbols)) return Damaged(path, "truncated section headers");
    found_table = symbols.sh_type == SHT_DYNSYM;
  }
  Elf64_Shdr names;
  if (!found_table || !section(symbols.sh_link, &names)) {
    return Damaged(path, "no dynamic symbol table");
  }
  for (uint64_t i = 0; i < symbols.sh_size / sizeof(Elf64_Sym); ++i) {
    Elf64_Sym entry;
    if (!ReadAt(bytes, symbols.sh_offset + i * sizeof(Elf64_Sym), &entry)) {
      return Damaged(path, "truncated dynamic symbol table");
    }
    if (entry.st_shndx == SHN_UNDEF || entry.st_name >= names.sh_size) continue;
    // The name matches with its terminating NUL, inside the file.
    const uint64_t name_offset = names.sh_offset + entry.st_name;
    if (name_offset >= bytes.size() || bytes.size() - name_offset <= symbol.size() ||
        bytes.compare(name_offset, symbol.size() + 1, symbol.c_str(), symbol.size() + 1) != 0) {
      continue;
    }
    // The value is an address; its section says where those bytes lie in the file.
    Elf64_Shdr data;
    uint64_t value = 0;
    if (entry.st_size != sizeof(value) || !section(entry.st_shndx, &data) ||
        data.sh_type == SHT_NOBITS || entry.st_value < data.sh_addr ||
        !ReadAt(bytes, data.sh_offset + (entry.st_value - data.sh_addr), &value)) {
      return Damaged(path, absl::StrCat("symbol '", symbol, "' is not an initialised 8-byte constant"));
    }
    return value;
  }
  return absl::NotFoundError(absl::StrCat("'", path, "' does not export '", symbol, "'"));
}

}  // namespace tfm
