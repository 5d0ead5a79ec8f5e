// Shared plumbing of the mxpack command-line tool: a subcommand registry,
// common flags and raw-binary I/O that never writes partial output.
#ifndef MXPACK_TOOLS_CLI_H_
#define MXPACK_TOOLS_CLI_H_

#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "mxpack/scalar.h"

ABSL_DECLARE_FLAG(std::string, in);
ABSL_DECLARE_FLAG(std::string, out);
ABSL_DECLARE_FLAG(std::string, from);
ABSL_DECLARE_FLAG(std::string, to);
ABSL_DECLARE_FLAG(std::string, rounding);
ABSL_DECLARE_FLAG(std::string, saturation);
ABSL_DECLARE_FLAG(bool, relu);
ABSL_DECLARE_FLAG(uint64_t, seed);

namespace mxpack::cli {

struct Command {
  const char* name;
  const char* summary;   // One line for `mxpack --help`.
  const char* usage;     // Synopsis and description for `mxpack NAME --help`.
  std::vector<const char*> flags;  // Flag names this command accepts.
  // Positional arguments (after flags are parsed). Returns the exit code.
  int (*run)(const std::vector<std::string>& args);
};

// Registers a subcommand; used from static initializers of tools/cmd_*.cc.
bool RegisterCommand(Command c);

// Reads all of PATH ("-" or empty: stdin).
absl::StatusOr<std::string> ReadInput(const std::string& path);
// Writes `data` to PATH ("-" or empty: stdout). Files go through
// mxpack::WriteFileAtomically (src/util/output_file.h): a temporary file next
// to the destination renamed into place, so a failure or an interruption
// leaves no partial output and the previous contents intact.
absl::Status WriteOutput(const std::string& path, absl::string_view data);

// Refuses, before any work, output paths that are not new names or regular
// files (directories, devices, FIFOs, sockets) and outputs that are the same
// file as an input or as another output ("-" and "" are stdin/stdout).
// Every command that writes files calls it first.
absl::Status CheckOutputs(const std::vector<std::string>& outputs,
                          const std::vector<std::string>& inputs);

// Prints "mxpack CMD: error: MESSAGE" to stderr and returns exit code 2 (a
// usage or input error; docs/cli.md lists the exit codes).
int Fail(absl::string_view cmd, const absl::Status& status);

// The encode policy from --rounding, --saturation and --relu.
absl::StatusOr<EncodePolicy> PolicyFromFlags();

}  // namespace mxpack::cli

#endif  // MXPACK_TOOLS_CLI_H_
