#include "text.hpp"

#include <cstdio>

namespace dtk::grade {

namespace {

// The length of the valid UTF-8 sequence starting at `at`, or 0 (overlong forms, surrogates
// and code points above U+10FFFF are invalid).
std::size_t utf8_length(std::string_view text, std::size_t at) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(at);
  std::size_t length;
  unsigned char low = 0x80, high = 0xbf;  // the allowed range of the second byte
  if (lead < 0x80) return 1;
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    if (lead == 0xe0) low = 0xa0;
    if (lead == 0xed) high = 0x9f;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    if (lead == 0xf0) low = 0x90;
    if (lead == 0xf4) high = 0x8f;
  } else {
    return 0;
  }
  if (at + length > text.size()) return 0;
  if (byte(at + 1) < low || byte(at + 1) > high) return 0;
  for (std::size_t i = 2; i < length; ++i) {
    if (byte(at + i) < 0x80 || byte(at + i) > 0xbf) return 0;
  }
  // C1 control characters (U+0080 to U+009F) are escaped like the C0 ones.
  if (lead == 0xc2 && byte(at + 1) <= 0x9f) return 0;
  return length;
}

std::string escaped(std::string_view text, bool keep_lines) {
  std::string shown;
  shown.reserve(text.size());
  for (std::size_t at = 0; at < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[at]);
    const std::size_t length = utf8_length(text, at);
    if (length > 1 || (length == 1 && c >= 0x20 && c != 0x7f) ||
        (keep_lines && (c == '\n' || c == '\t'))) {
      shown.append(text.substr(at, length));
    } else if (c == '\n') {
      shown += "\\n";
    } else if (c == '\t') {
      shown += "\\t";
    } else if (c == '\r') {
      shown += "\\r";
    } else {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      shown += hex;
    }
    at += length > 1 ? length : 1;
  }
  return shown;
}

}  // namespace

std::string shown_name(std::string_view text) { return escaped(text, false); }

std::string shown_text(std::string_view text) { return escaped(text, true); }

std::string shown_html(std::string_view text) {
  std::string html;
  for (char c : shown_text(text)) {
    switch (c) {
      case '<':
        html += "&lt;";
        break;
      case '>':
        html += "&gt;";
        break;
      case '&':
        html += "&amp;";
        break;
      case '"':
        html += "&quot;";
        break;
      case '\'':
        html += "&#39;";
        break;
      default:
        html += c;
    }
  }
  return html;
}

std::string csv_field(std::string_view text) {
  const std::string shown = shown_name(text);
  std::string field = "\"";
  if (!shown.empty() && std::string_view("=+-@").find(shown.front()) != std::string_view::npos)
    field += '\'';
  for (char c : shown) field += c == '"' ? std::string("\"\"") : std::string(1, c);
  return field + "\"";
}

std::string formatted(const char* format, double value) {
  char text[64];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

std::string spoken_list(const std::vector<int>& numbers) {
  std::string text;
  for (std::size_t i = 0; i < numbers.size(); ++i) {
    const std::size_t left = numbers.size() - 1 - i;
    text += std::to_string(numbers[i]) + (left == 0 ? "" : left == 1 ? " and " : ", ");
  }
  return text;
}

}  // namespace dtk::grade
