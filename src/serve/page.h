// The dashboard page, assembled from the embedded files (assets.h). Served, it loads its script,
// style and Chart.js from /assets/ and its data from the API. As a report, everything is inline:
// styles, Chart.js, the page's script and the run's data (a JSON block), under a Content Security
// Policy that allows no request at all, so it opens from disk with no server and no network.
#pragma once

#include <string>

#include "core/event.h"

namespace marathon::serve {

enum class PageMode { kServed, kReport };

// The page's HTML. `data` (report only) is what the page's script shows instead of asking the API.
std::string page_html(PageMode mode, const json& data = nullptr);

// The Content-Security-Policy header of the served page.
const char* served_page_csp();

}  // namespace marathon::serve
