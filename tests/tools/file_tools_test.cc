// read_file, write_file, edit_file, list_files, grep, and the workspace confinement they share.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tools/tool_registry.h"
#include "tools/workspace_tools.h"
#include "tools_test_support.h"

namespace marathon {
namespace {

namespace fs = std::filesystem;

class FileTools : public ::testing::Test {
 protected:
  FileTools() {
    for (auto& t : make_workspace_tools()) reg.add(std::move(t));
  }
  ToolResult call(const std::string& tool, const json& args) {
    return reg.call_json(tool, args, w.ctx);
  }
  testing::TempWorkspace w;
  ToolRegistry reg;
};

TEST_F(FileTools, WriteCreatesFoldersAndReturnsAWorkspaceWrittenEventWithTheBlob) {
  ToolResult r = call("write_file", {{"path", "src/k.cc"}, {"content", "int main() {}\n"}});
  ASSERT_TRUE(r.ok) << r.output;
  EXPECT_EQ(w.read(w.ws() / "src/k.cc"), "int main() {}\n");
  ASSERT_EQ(r.events.size(), 1u);
  EXPECT_EQ(r.events[0].type, "workspace.written");
  EXPECT_EQ(r.events[0].payload["path"], "src/k.cc");
  EXPECT_EQ(r.events[0].payload["size"], 14);
  EXPECT_EQ(w.blobs.at(r.events[0].payload["sha"].get<std::string>()), "int main() {}\n");
}

TEST_F(FileTools, ReadWholeFileAndALineRange) {
  w.write("a.txt", "one\ntwo\nthree\nfour\n");
  EXPECT_EQ(call("read_file", {{"path", "a.txt"}}).output, "one\ntwo\nthree\nfour\n");
  ToolResult r = call("read_file", {{"path", "a.txt"}, {"start_line", 2}, {"end_line", 3}});
  EXPECT_EQ(r.output, "two\nthree\n[lines 2-3 of 4]\n");
  ToolResult past = call("read_file", {{"path", "a.txt"}, {"start_line", 9}});
  EXPECT_FALSE(past.ok);
  EXPECT_NE(past.output.find("past the end (4 lines)"), std::string::npos) << past.output;
  ToolResult missing = call("read_file", {{"path", "nope.txt"}});
  EXPECT_FALSE(missing.ok);
  EXPECT_EQ(missing.output, "read_file nope.txt: no such file");
}

TEST_F(FileTools, ReadOfAHugeFileIsCappedAndSaysWhereToContinue) {
  std::string big;
  for (int i = 1; i <= 5000; ++i) big += "line " + std::to_string(i) + "\n";
  w.write("big.txt", big);
  ToolResult r = call("read_file", {{"path", "big.txt"}});
  ASSERT_TRUE(r.ok);
  EXPECT_NE(r.output.find("line 2000\n"), std::string::npos);
  EXPECT_EQ(r.output.find("line 2001\n"), std::string::npos);
  EXPECT_NE(r.output.find("[truncated: showed lines 1-2000 of 5000; read on with start_line=2001]"),
            std::string::npos);
}

TEST_F(FileTools, EditReplacesExactlyOneMatch) {
  w.write("k.py", "BLOCK = 32\nWARPS = 4\n");
  ToolResult r = call("edit_file",
                      {{"path", "k.py"}, {"old_string", "WARPS = 4"}, {"new_string", "WARPS = 8"}});
  ASSERT_TRUE(r.ok) << r.output;
  EXPECT_EQ(w.read(w.ws() / "k.py"), "BLOCK = 32\nWARPS = 8\n");
  ASSERT_EQ(r.events.size(), 1u);
  EXPECT_EQ(w.blobs.at(r.events[0].payload["sha"].get<std::string>()), "BLOCK = 32\nWARPS = 8\n");
}

TEST_F(FileTools, EditWithNoMatchFailsAndSaysZero) {
  w.write("k.py", "BLOCK = 32\n");
  ToolResult r = call(
      "edit_file", {{"path", "k.py"}, {"old_string", "BLOCK = 64"}, {"new_string", "BLOCK = 128"}});
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.output.find("0 matches"), std::string::npos) << r.output;
  EXPECT_TRUE(r.events.empty());
  EXPECT_EQ(w.read(w.ws() / "k.py"), "BLOCK = 32\n");
}

TEST_F(FileTools, EditWithSeveralMatchesFailsAndSaysHowManyAndWhere) {
  w.write("k.py", "x = 1\ny = 2\nx = 1\nx = 1\n");
  ToolResult r =
      call("edit_file", {{"path", "k.py"}, {"old_string", "x = 1"}, {"new_string", "x = 2"}});
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.output.find("matches 3 times (at lines 1, 3, 4)"), std::string::npos) << r.output;
  EXPECT_EQ(w.read(w.ws() / "k.py"), "x = 1\ny = 2\nx = 1\nx = 1\n");
}

TEST_F(FileTools, ListFilesShowsSizesFoldersAndLinks) {
  w.write("a.txt", "abc");
  w.write("sub/b.txt", "");
  fs::create_symlink("a.txt", w.ws() / "link");
  ToolResult r = call("list_files", json::object());
  ASSERT_TRUE(r.ok) << r.output;
  EXPECT_EQ(r.output, "a.txt  (3 bytes)\nlink -> a.txt\nsub/\nsub/b.txt  (0 bytes)\n");
  EXPECT_FALSE(call("list_files", {{"path", "a.txt"}}).ok);
}

TEST_F(FileTools, GrepFindsRegexMatchesWithPathAndLine) {
  w.write("k.py", "def kernel():\n    BLOCK_M = 64\n    BLOCK_N = 32\n");
  w.write("notes.md", "BLOCK sizes\n");
  ToolResult r = call("grep", {{"pattern", "BLOCK_[MN] = \\d+"}});
  ASSERT_TRUE(r.ok) << r.output;
  EXPECT_EQ(r.output, "k.py:2:     BLOCK_M = 64\nk.py:3:     BLOCK_N = 32\n");
  EXPECT_EQ(call("grep", {{"pattern", "block"}, {"ignore_case", true}, {"glob", "*.md"}}).output,
            "notes.md:1: BLOCK sizes\n");
  ToolResult capped = call("grep", {{"pattern", "BLOCK"}, {"max_matches", 1}});
  EXPECT_NE(capped.output.find("[stopped at 1 matches"), std::string::npos) << capped.output;
}

// A model's pattern must not stall the runner: with a backtracking matcher `(a+)+b` over a line
// of a's takes time exponential in the line (and recursion deep enough to overflow the stack).
// RE2 answers in linear time, and a line is matched whole, however long.
TEST_F(FileTools, GrepAnswersAHostilePatternAndMatchesPastLongPrefixes) {
  w.write("long.txt", std::string(200000, 'a') + "\n" + std::string(5000, 'x') + "NEEDLE\n");
  ToolResult hostile = call("grep", {{"pattern", "(a+)+b"}});
  ASSERT_TRUE(hostile.ok) << hostile.output;
  EXPECT_EQ(hostile.output, "no matches for /(a+)+b/ in .\n");
  ToolResult far = call("grep", {{"pattern", "x{1000}NEEDLE$"}});
  ASSERT_TRUE(far.ok) << far.output;
  EXPECT_EQ(far.output.rfind("long.txt:2: xxx", 0), 0u) << far.output.substr(0, 80);
  EXPECT_NE(far.output.find("..."), std::string::npos);  // the line shown is cut, not the match
  // A pattern whose compiled form is over the memory budget is refused, not built.
  ToolResult huge = call("grep", {{"pattern", "(((a{100}){100}){100})"}});
  EXPECT_FALSE(huge.ok);
  EXPECT_NE(huge.output.find("invalid regular expression"), std::string::npos) << huge.output;
}

TEST_F(FileTools, GrepWithAnInvalidRegexSaysSo) {
  ToolResult r = call("grep", {{"pattern", "([a-"}});
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.output.find("invalid regular expression '([a-'"), std::string::npos) << r.output;
}

TEST_F(FileTools, DotDotPathsAreRefused) {
  std::ofstream(w.outside() / "secret.txt") << "s3cret";
  for (const char* tool : {"read_file", "write_file", "edit_file"}) {
    json args = {{"path", "../outside/secret.txt"}};
    if (std::string(tool) == "write_file") args["content"] = "x";
    if (std::string(tool) == "edit_file") {
      args["old_string"] = "s3cret";
      args["new_string"] = "x";
    }
    ToolResult r = call(tool, args);
    EXPECT_FALSE(r.ok) << tool;
    EXPECT_NE(r.output.find("'..' climbs out of the workspace"), std::string::npos) << r.output;
  }
  EXPECT_FALSE(call("list_files", {{"path", ".."}}).ok);
  EXPECT_FALSE(call("grep", {{"pattern", "s3cret"}, {"path", "sub/../../outside"}}).ok);
  EXPECT_EQ(w.read(w.outside() / "secret.txt"), "s3cret");
}

TEST_F(FileTools, AbsolutePathsAreRefused) {
  std::string abs = (w.outside() / "x.txt").string();
  ToolResult r = call("write_file", {{"path", abs}, {"content", "x"}});
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.output.find("absolute path"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(abs));
  EXPECT_FALSE(call("read_file", {{"path", "/etc/passwd"}}).ok);
}

TEST_F(FileTools, SymlinksThatEscapeAreRefusedForReadAndWrite) {
  std::ofstream(w.outside() / "secret.txt") << "s3cret";
  fs::create_symlink(w.outside(), w.ws() / "out_dir");
  fs::create_symlink(w.outside() / "secret.txt", w.ws() / "out_file");
  fs::create_symlink(w.outside() / "new.txt", w.ws() / "dangling");  // target does not exist yet
  ToolResult read = call("read_file", {{"path", "out_dir/secret.txt"}});
  EXPECT_FALSE(read.ok);
  EXPECT_NE(read.output.find("outside the workspace"), std::string::npos) << read.output;
  EXPECT_FALSE(call("read_file", {{"path", "out_file"}}).ok);
  EXPECT_FALSE(call("write_file", {{"path", "out_file"}, {"content", "pwned"}}).ok);
  EXPECT_FALSE(call("write_file", {{"path", "out_dir/new.txt"}, {"content", "pwned"}}).ok);
  EXPECT_FALSE(call("write_file", {{"path", "dangling"}, {"content", "pwned"}}).ok);
  EXPECT_EQ(w.read(w.outside() / "secret.txt"), "s3cret");
  EXPECT_FALSE(fs::exists(w.outside() / "new.txt"));
  // grep walks the workspace but does not follow a link out of it.
  EXPECT_EQ(call("grep", {{"pattern", "s3cret"}}).output, "no matches for /s3cret/ in .\n");
}

TEST_F(FileTools, SymlinksInsideTheWorkspaceAreFollowed) {
  w.write("real/k.py", "v = 1\n");
  fs::create_symlink("real", w.ws() / "alias");
  ToolResult read = call("read_file", {{"path", "alias/k.py"}});
  ASSERT_TRUE(read.ok) << read.output;
  EXPECT_EQ(read.output, "v = 1\n");
  ToolResult r = call("write_file", {{"path", "alias/k.py"}, {"content", "v = 2\n"}});
  ASSERT_TRUE(r.ok) << r.output;
  EXPECT_EQ(r.events[0].payload["path"], "real/k.py");
  EXPECT_EQ(w.read(w.ws() / "real/k.py"), "v = 2\n");
}

TEST_F(FileTools, ReadOfAFifoIsRefusedAtOnceInsteadOfBlockingTheRunner) {
  ASSERT_EQ(::mkfifo((w.ws() / "pipe").c_str(), 0644), 0);
  ::alarm(20);  // a blocked read ends the test binary instead of hanging it
  ToolResult r = call("read_file", {{"path", "pipe"}});
  ToolResult e = call("edit_file", {{"path", "pipe"}, {"old_string", "a"}, {"new_string", "b"}});
  ToolResult g = call("grep", {{"pattern", "x"}, {"path", "pipe"}});
  ToolResult all = call("grep", {{"pattern", "x"}});
  ::alarm(0);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.output.find("is a FIFO, not a regular file"), std::string::npos) << r.output;
  EXPECT_FALSE(e.ok);
  EXPECT_FALSE(g.ok);
  EXPECT_TRUE(all.ok) << all.output;
}

TEST_F(FileTools, WriteOverAFileLinkOutIsRefusedAndEditThroughADirLinkOutToo) {
  std::ofstream(w.outside() / "host.cc") << "int host;";
  fs::create_symlink(w.outside() / "host.cc", w.ws() / "kernel.cc");
  fs::create_symlink("../outside", w.ws() / "sub");
  EXPECT_FALSE(call("write_file", {{"path", "kernel.cc"}, {"content", "pwned"}}).ok);
  ToolResult e =
      call("edit_file", {{"path", "sub/host.cc"}, {"old_string", "host"}, {"new_string", "x"}});
  EXPECT_FALSE(e.ok);
  EXPECT_NE(e.output.find("link 'sub' leads outside the workspace"), std::string::npos) << e.output;
  EXPECT_EQ(w.read(w.outside() / "host.cc"), "int host;");
  ToolResult list = call("list_files", {{"path", "sub"}});
  EXPECT_FALSE(list.ok);
}

TEST_F(FileTools, ListFilesShowsSpecialFilesAsWhatTheyAre) {
  ASSERT_EQ(::mkfifo((w.ws() / "pipe").c_str(), 0644), 0);
  EXPECT_EQ(call("list_files", json::object()).output, "pipe  (FIFO)\n");
}

}  // namespace
}  // namespace marathon
