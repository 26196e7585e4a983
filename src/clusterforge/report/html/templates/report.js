// Long tables arrive as JSON next to their empty body and are built when first opened
// (cells set as textContent, never as HTML); printing opens and fills every table.
(function () {
  "use strict";
  function fillTable(details) {
    var data = details.querySelector("script.table-rows");
    var body = details.querySelector("tbody.lazy-rows");
    if (!data || !body || body.childElementCount > 0) { return; }
    var numeric = JSON.parse(body.dataset.numeric);
    var rows = document.createDocumentFragment();
    JSON.parse(data.textContent).forEach(function (row) {
      var tr = document.createElement("tr");
      row.forEach(function (cell, i) {
        var td = document.createElement("td");
        if (numeric[i]) { td.className = "num"; }
        td.textContent = cell;
        tr.appendChild(td);
      });
      rows.appendChild(tr);
    });
    body.appendChild(rows);
  }
  // Everything under root that needs a script: called for the page, and again by the planner
  // for each section it swaps in (window.clusterforgeReport.init).
  function init(root) {
    root.querySelectorAll("details").forEach(function (details) {
      if (details.open) { fillTable(details); }
      details.addEventListener("toggle", function () {
        if (details.open) { fillTable(details); }
      });
    });
  }
  window.clusterforgeReport = { init: init };
  init(document);
  // Printing (or the PDF, which loads the page as "#print") shows every table the screen
  // keeps a click away, opened and filled; closed again after printing.
  var closed = [];
  function expandForPrint() {
    document.querySelectorAll("details:not([open])").forEach(function (details) {
      closed.push(details);
      details.open = true;
      fillTable(details);
    });
  }
  function restoreAfterPrint() {
    closed.forEach(function (details) { details.open = false; });
    closed = [];
  }
  window.addEventListener("beforeprint", expandForPrint);
  window.addEventListener("afterprint", restoreAfterPrint);
  if (window.location.hash === "#print") { expandForPrint(); }
})();
