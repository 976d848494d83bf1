#include "serve/page.h"

#include <openssl/evp.h>
#include <openssl/sha.h>

#include <stdexcept>
#include <string_view>

#include "serve/assets.h"

namespace marathon::serve {

namespace {

void replace_once(std::string& s, std::string_view marker, const std::string& with) {
  size_t at = s.find(marker);
  if (at == std::string::npos) {
    throw std::logic_error("page.html lacks the marker " + std::string(marker));
  }
  s.replace(at, marker.size(), with);
}

// JSON inside <script type="application/json">: no "</" (which could close the element) and no
// "<!--" (which changes how the element's end is found). Both escapes are valid JSON.
std::string script_safe_json(const json& data) {
  std::string text = data.dump(-1, ' ', false, json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '<' && i + 1 < text.size() && (text[i + 1] == '/' || text[i + 1] == '!')) {
      out += "\\u003c";
    } else {
      out += text[i];
    }
  }
  return out;
}

// 'sha256-...' of an inline script, for the report's Content Security Policy.
std::string csp_hash(std::string_view script) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(script.data()), script.size(), digest);
  unsigned char b64[4 * ((SHA256_DIGEST_LENGTH + 2) / 3) + 1];
  EVP_EncodeBlock(b64, digest, SHA256_DIGEST_LENGTH);
  return "'sha256-" + std::string(reinterpret_cast<const char*>(b64)) + "'";
}

std::string inline_script(std::string_view code) {
  // Our files and Chart.js hold no "</script" (checked by the page test); refuse rather than
  // emit a page that would break.
  if (code.find("</script") != std::string_view::npos) {
    throw std::logic_error("an embedded script holds </script");
  }
  return "<script>" + std::string(code) + "</script>";
}

}  // namespace

const char* served_page_csp() {
  return "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
         "img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; "
         "frame-ancestors 'none'";
}

std::string page_html(PageMode mode, const json& data) {
  std::string page(embedded_asset(AssetId::kPageHtml));
  std::string_view chart = embedded_asset(AssetId::kChartJs);
  std::string_view app = embedded_asset(AssetId::kAppJs);
  if (mode == PageMode::kServed) {
    replace_once(page, "<!--HEAD-->", "");
    replace_once(page, "<!--STYLE-->", "<link rel=\"stylesheet\" href=\"/assets/style.css\">");
    replace_once(page, "<!--DATA-->", "");
    replace_once(page, "<!--SCRIPTS-->",
                 "<script src=\"/assets/chart.js\"></script>\n"
                 "<script src=\"/assets/app.js\"></script>");
    return page;
  }
  std::string csp = "default-src 'none'; script-src " + csp_hash(chart) + " " + csp_hash(app) +
                    "; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; "
                    "form-action 'none'";
  replace_once(page, "<!--HEAD-->",
               "<meta http-equiv=\"Content-Security-Policy\" content=\"" + csp + "\">");
  replace_once(page, "<!--STYLE-->",
               "<style>" + std::string(embedded_asset(AssetId::kStyleCss)) + "</style>");
  replace_once(page, "<!--DATA-->",
               "<script type=\"application/json\" id=\"marathon-data\">" + script_safe_json(data) +
                   "</script>");
  replace_once(page, "<!--SCRIPTS-->", inline_script(chart) + "\n" + inline_script(app));
  return page;
}

}  // namespace marathon::serve
