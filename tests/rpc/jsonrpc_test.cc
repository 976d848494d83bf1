// JSON-RPC 2.0 parsing and the line transport: every malformed message is an error object with the
// right code and id, never an exception; lines are cut at newlines and bounded in length.
#include "rpc/jsonrpc.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <thread>

#include "rpc/line_io.h"

namespace marathon::rpc {
namespace {

json only_error(const std::string& line) {
  ParsedLine p = parse_line(line);
  EXPECT_EQ(p.entries.size(), 1u) << line;
  EXPECT_FALSE(p.entries.front().message) << line;
  return p.entries.front().error_response;
}

TEST(JsonRpc, RequestsNotificationsAndResponsesAreTold) {
  ParsedLine p = parse_line(R"({"jsonrpc":"2.0","id":"x","method":"a/b","params":{"k":1}})");
  ASSERT_TRUE(p.entries[0].message);
  EXPECT_EQ(p.entries[0].message->kind, Message::Kind::kRequest);
  EXPECT_EQ(p.entries[0].message->id, "x");
  EXPECT_EQ(p.entries[0].message->params["k"], 1);
  p = parse_line(R"({"jsonrpc":"2.0","method":"n"})");
  EXPECT_EQ(p.entries[0].message->kind, Message::Kind::kNotification);
  p = parse_line(R"({"jsonrpc":"2.0","id":null,"method":"n"})");
  EXPECT_EQ(p.entries[0].message->kind, Message::Kind::kRequest) << "a null id is still an id";
  p = parse_line(R"({"jsonrpc":"2.0","id":3,"result":{}})");
  EXPECT_EQ(p.entries[0].message->kind, Message::Kind::kResponse);
}

TEST(JsonRpc, MalformedMessagesGetTheirCodeAndTheirIdWhenItCanBeRead) {
  EXPECT_EQ(only_error("{nope")["error"]["code"], -32700);
  EXPECT_TRUE(only_error("{nope")["id"].is_null());
  EXPECT_EQ(only_error("[]")["error"]["code"], -32600);
  EXPECT_EQ(only_error("\"text\"")["error"]["code"], -32600);
  json e = only_error(R"({"jsonrpc":"2.0","id":4})");
  EXPECT_EQ(e["error"]["code"], -32600);
  EXPECT_EQ(e["id"], 4);
  e = only_error(R"({"id":5,"method":"m"})");
  EXPECT_EQ(e["error"]["code"], -32600);
  EXPECT_EQ(e["id"], 5);
  e = only_error(R"({"jsonrpc":"2.0","id":[1],"method":"m"})");
  EXPECT_TRUE(e["id"].is_null());
  e = only_error(R"({"jsonrpc":"2.0","id":6,"method":"m","params":"s"})");
  EXPECT_EQ(e["error"]["code"], -32600);
  e = only_error(R"({"jsonrpc":"2.0","id":7,"result":1,"error":{}})");
  EXPECT_EQ(e["error"]["code"], -32600) << "a response has a result or an error, not both";
}

TEST(JsonRpc, ABatchIsOneEntryPerElement) {
  ParsedLine p =
      parse_line(R"([{"jsonrpc":"2.0","id":1,"method":"a"},2,{"jsonrpc":"2.0","method":"n"}])");
  EXPECT_TRUE(p.batch);
  ASSERT_EQ(p.entries.size(), 3u);
  EXPECT_TRUE(p.entries[0].message);
  EXPECT_EQ(p.entries[1].error_response["error"]["code"], -32600);
  EXPECT_EQ(p.entries[2].message->kind, Message::Kind::kNotification);
}

TEST(JsonRpc, PositionalParamsAreRefusedAsInvalidParams) {
  Message m;
  m.method = "x";
  m.params = json::array({1});
  try {
    params_object(m);
    FAIL() << "positional params accepted";
  } catch (const RpcError& e) {
    EXPECT_EQ(e.code(), -32602);
  }
  m.params = nullptr;
  EXPECT_EQ(params_object(m), json::object());
}

class Pipe {
 public:
  Pipe() { EXPECT_EQ(::pipe(fds_), 0); }
  ~Pipe() {
    ::close(fds_[0]);
    if (fds_[1] >= 0) ::close(fds_[1]);
  }
  void write_and_close(const std::string& s) {
    EXPECT_EQ(::write(fds_[1], s.data(), s.size()), static_cast<ssize_t>(s.size()));
    ::close(fds_[1]);
    fds_[1] = -1;
  }
  int in() const { return fds_[0]; }
  int out() const { return fds_[1]; }

 private:
  int fds_[2] = {-1, -1};
};

TEST(LineReader, LinesAreCutAtNewlinesAndAnOverLongOneIsDroppedWhole) {
  Pipe p;
  p.write_and_close("one\r\n\n" + std::string(100, 'x') + "\ntwo\nlast");
  LineReader r(p.in(), /*max_bytes=*/50);
  EXPECT_EQ(r.next()->text, "one");
  EXPECT_EQ(r.next()->text, "");
  std::optional<LineReader::Line> long_line = r.next();
  ASSERT_TRUE(long_line);
  EXPECT_TRUE(long_line->too_long);
  EXPECT_EQ(r.next()->text, "two");
  EXPECT_EQ(r.next()->text, "last") << "a last line without a newline still counts";
  EXPECT_FALSE(r.next());
}

TEST(LineReader, AnOverLongLineSpanningReadsIsDropped) {
  Pipe p;
  std::string big(200000, 'y');  // more than one read of the reader
  std::thread writer([&] { p.write_and_close(big + "\nok\n"); });
  LineReader r(p.in(), /*max_bytes=*/1000);
  std::optional<LineReader::Line> l = r.next();
  ASSERT_TRUE(l);
  EXPECT_TRUE(l->too_long);
  EXPECT_EQ(r.next()->text, "ok");
  writer.join();
}

TEST(LineWriter, AClosedReaderMakesWritesFailNotKillTheProcess) {
  ignore_sigpipe();
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ::close(fds[0]);
  LineWriter w(fds[1]);
  EXPECT_FALSE(w.write(json{{"a", 1}}));
  EXPECT_TRUE(w.closed());
  ::close(fds[1]);
}

}  // namespace
}  // namespace marathon::rpc
