// Faults on memory-mapped files. A checkpoint or artifact is mapped read-only
// (SafetensorsFile); if the file is truncated or replaced in place while the
// process runs, touching a vanished page raises SIGBUS, which would otherwise
// kill the process without a word. Every mapping registers itself here; the
// handler, once installed, turns a SIGBUS inside a registered mapping into
//   submoe: error: FILE changed while in use: byte OFFSET is no longer in the
//   file (truncated or rewritten in place?); stopped without writing anything
// on stderr and exit status 1. Faults elsewhere keep the default action.
#pragma once

#include <cstddef>
#include <string>

namespace submoe::io {

// Installs the SIGBUS handler (idempotent). Programs call it once at start;
// libraries embedding submoe may keep their own handler instead.
void install_mapped_file_fault_handler();

// Registration of one mapping [base, base + size) of `path`; at most 1024 are
// tracked at once (later ones are mapped but not named by the handler).
int register_mapping(const void* base, size_t size, const std::string& path);
void unregister_mapping(int slot);

}  // namespace submoe::io
