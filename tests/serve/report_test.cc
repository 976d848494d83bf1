// The report: one file, everything inline, no request possible, and the model's text unable to
// break out of the data block.
#include "serve/report.h"

#include <gtest/gtest.h>

#include "run_log.h"

namespace marathon::serve {
namespace {

namespace mt = marathon::testing;

// The JSON of the data block.
json data_of(const std::string& html) {
  const std::string open = "<script type=\"application/json\" id=\"marathon-data\">";
  size_t a = html.find(open);
  size_t b = html.find("</script>", a);
  if (a == std::string::npos || b == std::string::npos) return nullptr;
  return json::parse(html.substr(a + open.size(), b - a - open.size()));
}

TEST(Report, IsSelfContainedWithTheRunsData) {
  mt::TempDir tmp("report");
  mt::RunLog log(tmp / "run");
  log.write("value = 4\n");
  log.eval(4.0, true, "ok", json::array(), "</script><script>alert(1)</script><!--");
  log.eval(std::nullopt, false);
  std::string html = render_report(log.dir());

  EXPECT_EQ(html.find("<script src"), std::string::npos);
  EXPECT_EQ(html.find("<link rel=\"stylesheet\""), std::string::npos);
  EXPECT_EQ(html.find("alert(1)</script>"), std::string::npos) << "the model's text stays data";
  EXPECT_NE(html.find("Content-Security-Policy\" content=\"default-src 'none'; script-src "
                      "'sha256-"),
            std::string::npos);
  EXPECT_NE(html.find("Chart.js v3"), std::string::npos);

  json d = data_of(html);
  ASSERT_TRUE(d.is_object());
  EXPECT_EQ(d["mode"], "report");
  EXPECT_EQ(d["run"]["evaluations"].size(), 2u);
  EXPECT_EQ(d["run"]["evaluations"][0]["strategy"], "</script><script>alert(1)</script><!--");
  EXPECT_EQ(d["best"]["candidate"], log.candidate());
  EXPECT_NE(d["best"]["diff_vs_starter"].get<std::string>().find("+value = 4"), std::string::npos)
      << d["best"];
}

TEST(Report, AMissingRunIsAStoreErrorNamingIt) {
  mt::TempDir tmp("report");
  try {
    render_report(tmp / "nope");
    FAIL() << "no error";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("nope"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace marathon::serve
