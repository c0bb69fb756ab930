// Text from untrusted sources (archive member names, exception messages, compiler output) made
// safe to show: valid UTF-8 for results.json, and no control characters that could forge lines
// of feedback or drive the terminal.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace dtk::grade {

// One name or message on one line: every control character and every byte that is not part
// of valid UTF-8 becomes a C-style escape ("\n", "\t", "\xff").
std::string shown_name(std::string_view text);

// Multi-line text (feedback, compiler output): the same, except that newlines and tabs stay.
std::string shown_text(std::string_view text);

// shown_text() for an HTML page (the batch's summary): <, >, &, " and ' escaped too.
std::string shown_html(std::string_view text);

// shown_name() as one field of a CSV file (the batch's gradebook): always quoted, a quote
// doubled, and a field that begins with =, +, - or @ prefixed with ', so that a spreadsheet
// shows it as text instead of running it as a formula (OWASP's rule against CSV injection: a
// student named "+1+1" or "@A1" stays a name; a leading tab or carriage return, the rule's
// other two, is already shown as \t or \r).
std::string csv_field(std::string_view text);

// A number as printf's `format` writes it ("%.4f", "%g"), for the grader's own texts.
std::string formatted(const char* format, double value);

// Numbers as a sentence lists them: "10", "2 and 3", "1, 2 and 3".
std::string spoken_list(const std::vector<int>& numbers);

}  // namespace dtk::grade
