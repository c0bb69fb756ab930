// Text made safe for where it goes: here, a field of the gradebook CSV.
#include <catch2/catch.hpp>

#include "text.hpp"

using namespace dtk::grade;

TEST_CASE("a CSV field is always quoted, its quotes doubled", "[text]") {
  CHECK(csv_field("alice") == "\"alice\"");
  CHECK(csv_field("100") == "\"100\"");
  CHECK(csv_field("") == "\"\"");
  CHECK(csv_field("grader failed (exit status 1, see \"output.txt\")") ==
        "\"grader failed (exit status 1, see \"\"output.txt\"\")\"");
}

TEST_CASE("a CSV field a spreadsheet would run as a formula is prefixed with '", "[text]") {
  for (const char* name : {"+1+1", "-2+3", "@A1", "=HYPERLINK(\"x\")"}) {
    CAPTURE(name);
    CHECK(csv_field(name).substr(0, 2) == "\"'");
  }
  CHECK(csv_field("a=1") == "\"a=1\"");  // only the first character counts
}

TEST_CASE("a CSV field keeps to one line: control characters are escaped", "[text]") {
  CHECK(csv_field("\tx") == "\"\\tx\"");
  CHECK(csv_field("a\r\nb") == "\"a\\r\\nb\"");
}
