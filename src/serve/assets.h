// The dashboard's static files, compiled into the binary (src/serve/assets/, and Chart.js from
// Debian's libjs-chart.js, /usr/share/javascript/chart.js, at build time): the page needs no
// network and no files at run time.
#pragma once

#include <string_view>

namespace marathon::serve {

enum class AssetId { kPageHtml, kAppJs, kStyleCss, kChartJs };

std::string_view embedded_asset(AssetId id);

}  // namespace marathon::serve
