// Entry point of the mxpack command-line tool: dispatches to subcommands.
#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <map>
#include <string>
#include <unistd.h>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
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
  std::fprintf(f, "\n'mxpack COMMAND --help' describes one command.\n");
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

// Rejects flags that exist but do not belong to this command, so that e.g.
// `mxpack table e4m3 --rounding=rz` is an error rather than silently ignored.
absl::Status CheckFlagsBelong(const Command& c, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    absl::string_view a = argv[i];
    if (a == "--") break;
    if (!absl::StartsWith(a, "-") || a == "-") continue;
    a.remove_prefix(absl::StartsWith(a, "--") ? 2 : 1);
    a = a.substr(0, a.find('='));
    if (absl::StartsWith(a, "no") && absl::FindCommandLineFlag(a.substr(2))) {
      a.remove_prefix(2);
    }
    bool ok = false;
    for (const char* f : c.flags) ok |= a == f;
    if (!ok && absl::FindCommandLineFlag(a) != nullptr) {
      return absl::InvalidArgumentError(
          absl::StrFormat("flag --%s does not apply to 'mxpack %s'", a, c.name));
    }
  }
  return absl::OkStatus();
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
  const std::string tmp = absl::StrCat(path, ".mxpack-tmp");
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) {
    return absl::PermissionDeniedError(
        absl::StrFormat("--out=%s: cannot open for writing", path));
  }
  const bool ok = std::fwrite(data.data(), 1, data.size(), f) == data.size();
  if (std::fclose(f) != 0 || !ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return absl::DataLossError(absl::StrFormat("--out=%s: write error", path));
  }
  return absl::OkStatus();
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
  // argv without the command name, so absl sees "mxpack [flags] [args]".
  // Flag names may be spelled with hyphens (--fp6-container): Abseil flag
  // names use underscores, so normalize the name part before parsing.
  std::vector<std::string> storage;
  storage.reserve(static_cast<size_t>(argc));
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) == 0 && a.size() > 2) {
      const size_t end = std::min(a.find('='), a.size());
      for (size_t k = 2; k < end; ++k) {
        if (a[k] == '-') a[k] = '_';
      }
    }
    storage.push_back(std::move(a));
  }
  std::vector<char*> args;
  for (std::string& a : storage) args.push_back(a.data());
  args.erase(args.begin() + 1);
  for (size_t i = 1; i < args.size(); ++i) {
    const absl::string_view a = args[i];
    if (a == "--") break;
    if (a == "--help" || a == "-h" || a == "--helpfull") {
      mxpack::cli::PrintCommandHelp(cmd);
      return 0;
    }
  }
  if (absl::Status s = mxpack::cli::CheckFlagsBelong(
          cmd, static_cast<int>(args.size()), args.data());
      !s.ok()) {
    return mxpack::cli::Fail(cmd.name, s);
  }
  std::vector<char*> positional =
      absl::ParseCommandLine(static_cast<int>(args.size()), args.data());
  std::vector<std::string> rest(positional.begin() + 1, positional.end());
  return cmd.run(rest);
}
