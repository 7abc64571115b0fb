// Scaffolding of the tests that work on files and run the `bagua` command (tests/experiments,
// tests/paper, tests/runtime/mpi_cli): a fresh directory per test, whole-file reads and writes, and a
// command run as a child process.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace bagua::testing {

// A file's whole content ("" when it cannot be read).
inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Writes `text` as the whole file `p`, creating its folder.
inline void write_file(const std::filesystem::path& p, const std::string& text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

// `text` cut at its line breaks (no empty last line for a text ending in one).
inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream s(text);
  for (std::string line; std::getline(s, line);)
    lines.push_back(line);
  return lines;
}

// `s` as one word for the shell.
inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s)
    q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

struct CommandResult {
  int exit_code = -1;  // -1: it did not exit normally
  std::string out;
  std::string err;
};

// Runs `launcher` (shell text, may be empty) followed by `words` (each quoted) in the folder `cwd`,
// with an empty stdin; its stdout and stderr go through the files `scratch`/stdout and
// `scratch`/stderr.
inline CommandResult run_command(const std::string& cwd, const std::string& launcher,
                                 const std::vector<std::string>& words,
                                 const std::filesystem::path& scratch) {
  std::string cmd = "cd " + shell_quote(cwd) + " && " + launcher;
  for (size_t i = 0; i < words.size(); ++i)
    cmd += (i ? " " : "") + shell_quote(words[i]);
  cmd += " </dev/null >" + shell_quote((scratch / "stdout").string()) + " 2>" +
         shell_quote((scratch / "stderr").string());
  const int status = std::system(cmd.c_str());
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = read_file(scratch / "stdout");
  r.err = read_file(scratch / "stderr");
  return r;
}

// A fixture whose every test gets dir_, TMP/<prefix>_<pid>_<test name>: emptied before the test (and
// created, unless `create` is false) and removed after it.
class ScratchDirTest : public ::testing::Test {
 protected:
  explicit ScratchDirTest(std::string prefix, bool create = true)
      : prefix_(std::move(prefix)), create_(create) {}

  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           (prefix_ + "_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    if (create_) std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path dir_;

 private:
  std::string prefix_;
  bool create_;
};

}  // namespace bagua::testing
