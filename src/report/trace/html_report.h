// Renders any ferret JSON document (ferret.analysis/1, ferret.job/1, ferret.diff/2) as one
// self-contained HTML page (docs/HTML.md): the document travels inside the page as JSON, and the
// page's inline script draws the report from it with DOM text nodes only, so no string from a
// trace is ever parsed as markup. Inline CSS, JavaScript and SVG; a Content-Security-Policy that
// forbids every fetch; opens offline in any browser.
#pragma once

#include <string>
#include <string_view>

namespace ferret {

// `document_json` is the document as `--json` prints it; `title` names the page (the input).
std::string html_page(std::string_view document_json, std::string_view title);

// JSON text made safe inside <script type="application/json">: '<', '>' and '&' (only ever inside
// JSON strings) become \u003c \u003e \u0026, so "</script>" or "<!--" in a trace cannot end the block.
std::string json_for_script(std::string_view json);

}  // namespace ferret
