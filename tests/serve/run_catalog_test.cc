// The runs folder: which names are run ids, and that links and folders without a log are not runs.
#include "serve/run_catalog.h"

#include <gtest/gtest.h>

#include <fstream>

#include "../loop/loop_test_support.h"

namespace marathon::serve {
namespace {

namespace fs = std::filesystem;
namespace mt = marathon::testing;

TEST(RunCatalog, RunIdsAreFolderNamesNeverPaths) {
  for (const char* id : {"r1", "kda-2026-12-05", "a.b_c", "X"}) EXPECT_TRUE(is_valid_run_id(id));
  for (const char* id :
       {"", ".", "..", ".hidden", "-x", "a/b", "a\\b", "%2e%2e", "a b", "r1\n", "é"}) {
    EXPECT_FALSE(is_valid_run_id(id)) << id;
  }
  EXPECT_TRUE(is_valid_run_id(std::string(128, 'a')));
  EXPECT_FALSE(is_valid_run_id(std::string(129, 'a')));
}

TEST(RunCatalog, ListsRealRunFoldersOnly) {
  mt::TempDir tmp("catalog");
  fs::create_directories(tmp / "runs/good");
  std::ofstream(tmp / "runs/good/events.db") << "x";
  fs::create_directories(tmp / "runs/empty");  // no log
  fs::create_directories(tmp / "outside");
  std::ofstream(tmp / "outside/events.db") << "x";
  fs::create_directory_symlink(tmp / "outside", tmp / "runs/link");  // a link to a run
  fs::create_directories(tmp / "runs/loglink");
  fs::create_symlink(tmp / "outside/events.db", tmp / "runs/loglink/events.db");
  std::ofstream(tmp / "runs/file") << "x";

  RunCatalog c(tmp / "runs");
  EXPECT_EQ(c.list(), std::vector<std::string>{"good"});
  fs::path dir;
  EXPECT_EQ(c.find("good", &dir), RunLookup::kFound);
  EXPECT_EQ(dir, tmp / "runs/good");
  EXPECT_EQ(c.find("link", &dir), RunLookup::kNotFound);
  EXPECT_EQ(c.find("loglink", &dir), RunLookup::kNotFound);
  EXPECT_EQ(c.find("empty", &dir), RunLookup::kNotFound);
  EXPECT_EQ(c.find("..", &dir), RunLookup::kBadId);
  EXPECT_THROW(RunCatalog(tmp / "runs/file"), std::invalid_argument);
}

}  // namespace
}  // namespace marathon::serve
