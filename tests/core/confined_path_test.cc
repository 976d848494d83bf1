// The pure rules of workspace paths (core/confined_path.h): normalisation and link resolution over
// a fake file system, so every case is exact and no disk is involved.
#include "core/confined_path.h"

#include <gtest/gtest.h>

#include <map>

namespace marathon {
namespace {

PathParts parts(std::initializer_list<const char*> l) { return PathParts(l.begin(), l.end()); }

std::optional<PathParts> norm(const std::string& p, std::string* error = nullptr) {
  std::string e;
  auto r = normalize_relative(p, &e);
  if (error) *error = e;
  return r;
}

TEST(NormalizeRelative, DotsAndEmptyPartsDropAndDotDotInsideIsLexical) {
  EXPECT_EQ(norm("a/./b//c/"), parts({"a", "b", "c"}));
  EXPECT_EQ(norm("a/../b"), parts({"b"}));
  EXPECT_EQ(norm("."), PathParts{});
  EXPECT_EQ(norm("a/.."), PathParts{});
}

TEST(NormalizeRelative, DotDotClimbingOutIsRefused) {
  std::string e;
  EXPECT_FALSE(norm("..", &e));
  EXPECT_NE(e.find("'..' climbs out of the workspace"), std::string::npos) << e;
  EXPECT_FALSE(norm("../outside/secret.txt"));
  EXPECT_FALSE(norm("a/../../b"));
  EXPECT_FALSE(norm("a/b/../../../etc/passwd"));
}

TEST(NormalizeRelative, AbsoluteEmptyAndNulPathsAreRefused) {
  std::string e;
  EXPECT_FALSE(norm("/etc/passwd", &e));
  EXPECT_NE(e.find("absolute path"), std::string::npos) << e;
  EXPECT_FALSE(norm("", &e));
  EXPECT_EQ(e, "empty path");
  EXPECT_FALSE(norm(std::string("a\0b", 3), &e));
  EXPECT_NE(e.find("NUL"), std::string::npos);
}

TEST(IsSafeRelativePath, OnlyTheNormalFormPasses) {
  EXPECT_TRUE(is_safe_relative_path("src/kernel.cc"));
  EXPECT_FALSE(is_safe_relative_path("/etc/passwd"));
  EXPECT_FALSE(is_safe_relative_path("a/../../b"));
  EXPECT_FALSE(is_safe_relative_path("a//b"));
  EXPECT_FALSE(is_safe_relative_path("./a"));
  EXPECT_FALSE(is_safe_relative_path(""));
  EXPECT_FALSE(is_safe_relative_path(std::string("a\0b", 3)));
}

// A fake tree: "path" -> entry; folders are listed with kind kDir, anything absent is missing.
class FakeTree {
 public:
  FakeTree& dir(const std::string& p) {
    m_[p] = Entry{EntryKind::kDir};
    return *this;
  }
  FakeTree& file(const std::string& p) {
    m_[p] = Entry{EntryKind::kFile, "", 7};
    return *this;
  }
  FakeTree& link(const std::string& p, const std::string& target) {
    m_[p] = Entry{EntryKind::kLink, target};
    return *this;
  }
  FakeTree& fifo(const std::string& p) {
    m_[p] = Entry{EntryKind::kFifo};
    return *this;
  }
  Lookup lookup() const {
    return [this](const PathParts& d, const std::string& name) {
      PathParts p = d;
      p.push_back(name);
      auto it = m_.find(join_parts(p));
      return it == m_.end() ? Entry{} : it->second;
    };
  }
  Resolved follow(const std::string& p, bool follow_last = true) const {
    return resolve_beneath(*normalize_relative(p, &err_), Links::kFollowInside, follow_last,
                           lookup());
  }
  Resolved nofollow(const std::string& p) const {
    return resolve_beneath(*normalize_relative(p, &err_), Links::kNone, false, lookup());
  }

 private:
  std::map<std::string, Entry> m_;
  mutable std::string err_;
};

TEST(ResolveBeneath, PlainFilesFoldersAndTheRoot) {
  FakeTree t;
  t.dir("src").file("src/k.cc");
  Resolved r = t.follow("src/k.cc");
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.parts, parts({"src", "k.cc"}));
  EXPECT_EQ(r.kind, EntryKind::kFile);
  EXPECT_EQ(r.size, 7u);
  EXPECT_EQ(t.follow(".").kind, EntryKind::kDir);
  EXPECT_EQ(t.follow("src").kind, EntryKind::kDir);
}

TEST(ResolveBeneath, MissingTailIsReportedWithWhereItStarts) {
  FakeTree t;
  t.dir("src");
  Resolved r = t.follow("src/new/deeper/k.cc");
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.kind, EntryKind::kMissing);
  EXPECT_EQ(r.parts, parts({"src", "new", "deeper", "k.cc"}));
  EXPECT_EQ(r.missing_from, 1u);
}

TEST(ResolveBeneath, ALinkThatStaysInsideIsFollowedAndTheResultHoldsNoLink) {
  FakeTree t;
  t.dir("real").file("real/k.py").link("alias", "real").dir("sub").link("sub/up", "../real/k.py");
  Resolved r = t.follow("alias/k.py");
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.parts, parts({"real", "k.py"}));
  Resolved up = t.follow("sub/up");
  ASSERT_TRUE(up.ok()) << up.error;
  EXPECT_EQ(up.parts, parts({"real", "k.py"}));
  EXPECT_EQ(up.kind, EntryKind::kFile);
}

TEST(ResolveBeneath, AFileLinkToAnAbsolutePathIsRefused) {
  FakeTree t;
  t.link("kernel.cc", "/etc/passwd");
  Resolved r = t.follow("kernel.cc");
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.error.find("link 'kernel.cc' points to the absolute path '/etc/passwd', outside"),
            std::string::npos)
      << r.error;
}

TEST(ResolveBeneath, ADirLinkThatClimbsOutIsRefusedForAnyPathThroughIt) {
  FakeTree t;
  t.dir("a").link("a/out", "../../host");
  Resolved r = t.follow("a/out/file.txt");
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.error.find("link 'a/out' leads outside the workspace"), std::string::npos) << r.error;
}

TEST(ResolveBeneath, ADanglingLinkOutIsRefusedAndADanglingLinkInsideGivesItsTarget) {
  FakeTree t;
  t.link("out", "../nowhere").link("in", "later/new.txt");
  EXPECT_FALSE(t.follow("out").ok());
  Resolved in = t.follow("in");
  ASSERT_TRUE(in.ok()) << in.error;
  EXPECT_EQ(in.kind, EntryKind::kMissing);
  EXPECT_EQ(in.parts, parts({"later", "new.txt"}));
}

TEST(ResolveBeneath, ALinkLoopEndsAfterFortyHops) {
  FakeTree t;
  t.link("a", "b").link("b", "a");
  Resolved r = t.follow("a");
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.error.find("more than 40"), std::string::npos) << r.error;
}

TEST(ResolveBeneath, WithoutFollowingALastLinkIsAnEntryAndAMidPathLinkIsRefused) {
  FakeTree t;
  t.dir("real").file("real/k").link("alias", "real").link("k2", "/etc/passwd");
  Resolved last = t.nofollow("k2");
  ASSERT_TRUE(last.ok()) << last.error;
  EXPECT_EQ(last.kind, EntryKind::kLink);
  EXPECT_EQ(last.link_target, "/etc/passwd");
  Resolved mid = t.nofollow("alias/k");
  EXPECT_FALSE(mid.ok());
  EXPECT_NE(mid.error.find("'alias' is a symbolic link"), std::string::npos) << mid.error;
  // follow_last=false under kFollowInside: mid-path links followed, the last one reported.
  Resolved l = t.follow("k2", /*follow_last=*/false);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l.kind, EntryKind::kLink);
}

TEST(ResolveBeneath, AFileOrFifoInMidPathIsNotAFolder) {
  FakeTree t;
  t.file("f").fifo("p");
  EXPECT_FALSE(t.follow("f/x").ok());
  Resolved r = t.follow("p/x");
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.error.find("'p' is a FIFO, not a folder"), std::string::npos) << r.error;
  EXPECT_EQ(t.follow("p").kind, EntryKind::kFifo);
}

TEST(ResolveBeneath, ALookupErrorIsPassedOn) {
  Lookup broken = [](const PathParts&, const std::string&) {
    Entry e;
    e.error = "cannot stat 'x': Input/output error";
    return e;
  };
  Resolved r = resolve_beneath(parts({"x"}), Links::kFollowInside, true, broken);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.error, "cannot stat 'x': Input/output error");
}

}  // namespace
}  // namespace marathon
