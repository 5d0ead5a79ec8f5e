// Entry point of the mxpack command-line tool: dispatches to subcommands.
#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <unistd.h>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/commandlineflag.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "src/util/output_file.h"
#include "tools/cli.h"

ABSL_FLAG(std::string, in, "-", "Input file ('-' = stdin)");
ABSL_FLAG(std::string, out, "-", "Output file ('-' = stdout)");
ABSL_FLAG(std::string, from, "", "Source format");
ABSL_FLAG(std::string, to, "", "Destination format");
ABSL_FLAG(std::string, rounding, "rn", "Rounding: rn, rz, rm, rp, rs");
ABSL_FLAG(std::string, saturation, "satfinite", "Saturation: satfinite, nosat");
ABSL_FLAG(bool, relu, false, "Negative values and -0 become +0 (PTX .relu)");
ABSL_FLAG(uint64_t, seed, 0,
          "Seed of the counter-based random bits used by --rounding=rs");

namespace mxpack::cli {
namespace {

std::map<std::string, Command>& Registry() {
  static auto* registry = new std::map<std::string, Command>();
  return *registry;
}

void PrintTopUsage(FILE* f) {
  std::fprintf(f,
               "mxpack %s: bit-exact microscaling float conversion, packing and "
               "reduction.\n\nUsage: mxpack COMMAND [flags] [args]\n\nCommands:\n",
               MXPACK_VERSION);
  for (const auto& [name, c] : Registry()) {
    std::fprintf(f, "  %-14s %s\n", name.c_str(), c.summary);
  }
  std::fprintf(f,
               "\n'mxpack COMMAND --help' describes one command.\n\nExit status: 0 "
               "success; 1 a negative verdict (ptx-check: illegal, gpu-verify:\n"
               "mismatch, demo: verification failed); 2 a usage or input error "
               "(docs/cli.md).\n");
}

void PrintCommandHelp(const Command& c) {
  std::printf("Usage: mxpack %s\n\n", c.usage);
  if (c.flags.empty()) return;
  std::printf("Flags:\n");
  for (const char* name : c.flags) {
    const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    if (flag == nullptr) continue;
    std::printf("  --%-18s %s (default: \"%s\")\n", name, flag->Help().c_str(),
                flag->DefaultValue().c_str());
  }
}

// What a flag's value must look like, for error messages.
const char* ExpectedValue(const absl::CommandLineFlag& flag) {
  if (flag.IsOfType<bool>()) return "true or false";
  if (flag.IsOfType<int32_t>()) return "a 32-bit integer";
  if (flag.IsOfType<int64_t>()) return "a 64-bit integer";
  if (flag.IsOfType<uint64_t>()) return "a non-negative 64-bit integer";
  if (flag.IsOfType<double>()) return "a number";
  return "a valid value";
}

// The command's flags from ARGS (argv without the program and command names):
// sets each flag and returns the positional arguments. Every problem is an
// InvalidArgument naming the flag (exit status 2), never the flags library's
// own exit: an unknown flag, a flag of another command, a missing or
// unparsable value. Syntax as Abseil's: --name=value, --name value (not for
// bool), --name / --noname for bool, one or two dashes, "--" ends the flags
// and "-" is an argument; hyphens in names read as underscores.
absl::StatusOr<std::vector<std::string>> ParseFlags(const Command& c,
                                                    const std::vector<std::string>& args) {
  std::vector<std::string> positional;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      positional.insert(positional.end(), args.begin() + static_cast<long>(i) + 1,
                        args.end());
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      positional.push_back(arg);
      continue;
    }
    absl::string_view spelled = arg;
    spelled.remove_prefix(absl::StartsWith(spelled, "--") ? 2 : 1);
    const size_t eq = spelled.find('=');
    std::string name(spelled.substr(0, eq));
    for (char& ch : name) {
      if (ch == '-') ch = '_';
    }
    std::optional<std::string> value;
    if (eq != absl::string_view::npos) value = std::string(spelled.substr(eq + 1));
    absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    bool negated = false;
    if (flag == nullptr && absl::StartsWith(name, "no")) {
      absl::CommandLineFlag* f = absl::FindCommandLineFlag(name.substr(2));
      if (f != nullptr && f->IsOfType<bool>()) {
        flag = f;
        negated = true;
        name = name.substr(2);
      }
    }
    const std::string shown = std::string(arg.substr(0, arg.find('=')));
    bool belongs = false;
    for (const char* f : c.flags) belongs |= name == f;
    if (flag == nullptr) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "unknown flag %s; 'mxpack %s --help' lists the flags", shown, c.name));
    }
    if (!belongs) {
      return absl::InvalidArgumentError(
          absl::StrFormat("flag %s does not apply to 'mxpack %s'", shown, c.name));
    }
    if (flag->IsOfType<bool>()) {
      if (negated && value.has_value()) {
        return absl::InvalidArgumentError(
            absl::StrFormat("flag %s takes no value, got '%s'", shown, *value));
      }
      if (!value.has_value()) value = negated ? "false" : "true";
    } else if (!value.has_value()) {
      if (i + 1 >= args.size() || absl::StartsWith(args[i + 1], "--")) {
        return absl::InvalidArgumentError(
            absl::StrFormat("flag %s: missing value (--%s=VALUE)", shown, name));
      }
      value = args[++i];
    }
    std::string error;
    if (!flag->ParseFrom(*value, &error)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "flag %s: expected %s, got '%s'", shown, ExpectedValue(*flag), *value));
    }
  }
  return positional;
}

}  // namespace

bool RegisterCommand(Command c) {
  Registry().emplace(c.name, std::move(c));
  return true;
}

absl::StatusOr<std::string> ReadInput(const std::string& path) {
  FILE* f = (path.empty() || path == "-") ? stdin : std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    return absl::NotFoundError(absl::StrFormat("--in=%s: cannot open for reading", path));
  }
  std::string data;
  char buf[1 << 16];
  size_t got;
  while ((got = std::fread(buf, 1, sizeof(buf), f)) > 0) data.append(buf, got);
  const bool err = std::ferror(f);
  if (f != stdin) std::fclose(f);
  if (err) return absl::DataLossError(absl::StrFormat("--in=%s: read error", path));
  return data;
}

absl::Status WriteOutput(const std::string& path, absl::string_view data) {
  if (path.empty() || path == "-") {
    if (std::fwrite(data.data(), 1, data.size(), stdout) != data.size() ||
        std::fflush(stdout) != 0) {
      return absl::DataLossError("stdout: write error");
    }
    return absl::OkStatus();
  }
  return WriteFileAtomically(path, data);
}

absl::Status CheckOutputs(const std::vector<std::string>& outputs,
                          const std::vector<std::string>& inputs) {
  return CheckOutputFiles(outputs, inputs);
}

int Fail(absl::string_view cmd, const absl::Status& status) {
  std::fprintf(stderr, "mxpack %s: error: %s\n", std::string(cmd).c_str(),
               std::string(status.message()).c_str());
  return 2;
}

absl::StatusOr<EncodePolicy> PolicyFromFlags() {
  EncodePolicy p;
  absl::StatusOr<Rounding> r = ParseRounding(absl::GetFlag(FLAGS_rounding));
  if (!r.ok()) return r.status();
  absl::StatusOr<Saturation> s = ParseSaturation(absl::GetFlag(FLAGS_saturation));
  if (!s.ok()) return s.status();
  p.rounding = *r;
  p.saturation = *s;
  p.relu = absl::GetFlag(FLAGS_relu);
  return p;
}

}  // namespace mxpack::cli

int main(int argc, char** argv) {
  using mxpack::cli::Registry;
  absl::SetProgramUsageMessage("mxpack COMMAND [flags]; see 'mxpack --help'");
  if (argc < 2 || absl::string_view(argv[1]) == "--help" ||
      absl::string_view(argv[1]) == "-h" || absl::string_view(argv[1]) == "help") {
    mxpack::cli::PrintTopUsage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (absl::string_view(argv[1]) == "--version") {
    std::printf("mxpack %s\n", MXPACK_VERSION);
    return 0;
  }
  auto it = Registry().find(argv[1]);
  if (it == Registry().end()) {
    std::fprintf(stderr, "mxpack: error: unknown command '%s'\n\n", argv[1]);
    mxpack::cli::PrintTopUsage(stderr);
    return 2;
  }
  const mxpack::cli::Command& cmd = it->second;
  const std::vector<std::string> args(argv + 2, argv + argc);
  for (const std::string& a : args) {
    if (a == "--") break;
    if (a == "--help" || a == "-h" || a == "--helpfull") {
      mxpack::cli::PrintCommandHelp(cmd);
      return 0;
    }
  }
  absl::StatusOr<std::vector<std::string>> positional =
      mxpack::cli::ParseFlags(cmd, args);
  if (!positional.ok()) return mxpack::cli::Fail(cmd.name, positional.status());
  return cmd.run(*positional);
}
