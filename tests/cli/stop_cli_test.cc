// `marathon stop RUN_DIR [REASON]` through the real binary: an open run gets one
// run.stop_requested; a paused run gets nothing; a finished run is an error that appends nothing.
#include <gtest/gtest.h>

#include "../loop/loop_test_support.h"
#include "goal/task_spec.h"
#include "loop/run_setup.h"

namespace marathon {
namespace {

namespace fs = std::filesystem;
namespace mt = marathon::testing;

class StopCli : public ::testing::Test {
 protected:
  void SetUp() override {
    NewRunOptions o;
    o.run_dir = run_;
    o.policy = "search";
    create_run(load_task(mt::tiny_task()), o);
  }
  int stop(std::vector<std::string> args) {
    args.insert(args.begin(), "stop");
    fs::remove(log_);
    int rc = mt::run_binary(args, {}, log_, 60);
    out_ = mt::read_text(log_);
    return rc;
  }
  void append(const NewEvent& e) {
    EventStore::open((run_ / "events.db").string(), EventStore::Mode::kOpen)->append(e);
  }
  std::vector<Event> requests() {
    return mt::events_of_type(mt::load_events(run_), events::RunStopRequested::kType);
  }

  mt::TempDir tmp_{"stop-cli"};
  fs::path run_ = tmp_ / "run";
  fs::path log_ = tmp_ / "out.log";
  std::string out_;
};

TEST_F(StopCli, AnOpenRunGetsOneStopRequestWithItsReason) {
  ASSERT_EQ(stop({run_.string(), "time for lunch"}), 0) << out_;
  std::vector<Event> r = requests();
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].payload["reason"], "time for lunch");
}

TEST_F(StopCli, APausedRunIsLeftAlone) {
  append({events::RunPaused::kType, {{"reason", "interrupted"}}});
  size_t before = mt::load_events(run_).size();
  ASSERT_EQ(stop({run_.string()}), 0) << out_;
  EXPECT_NE(out_.find("already stopped"), std::string::npos) << out_;
  EXPECT_EQ(mt::load_events(run_).size(), before);
}

TEST_F(StopCli, AFinishedRunIsAnErrorAndAppendsNothing) {
  append({events::RunFinished::kType, {{"reason", "finish"}}});
  size_t before = mt::load_events(run_).size();
  EXPECT_EQ(stop({run_.string()}), 2);
  EXPECT_NE(out_.find("finished"), std::string::npos) << out_;
  EXPECT_EQ(mt::load_events(run_).size(), before);
}

}  // namespace
}  // namespace marathon
