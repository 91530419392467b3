// Filters for the matrix page: a search over cases, family, outcome, "only rows where clients
// disagree", grouping by identical outcome vectors. They apply to the overview and to the detailed
// rows, and are kept in the URL's fragment (#q=...&family=...&outcome=...&disagree=1&group=1), so a
// filtered view can be shared. Works from file:// (no fetch, no modules, no network).
(function () {
  var table = document.getElementById("matrix");
  var overview = document.getElementById("overview");
  if (!table || !overview) return;
  var bodies = Array.prototype.slice.call(table.tBodies);
  var rows = [];
  bodies.forEach(function (body) {
    Array.prototype.forEach.call(body.rows, function (row) {
      if (row.dataset.vector !== undefined) rows.push(row);
    });
  });
  var lines = Array.prototype.slice.call(overview.tBodies[0].rows);
  var search = document.getElementById("f-search");
  var family = document.getElementById("f-family");
  var outcome = document.getElementById("f-outcome");
  var disagree = document.getElementById("f-disagree");
  var group = document.getElementById("f-group");
  var count = document.getElementById("f-count");

  function matches(row, words) {  // every word in the case's id or description
    var text = row.dataset.search || "";
    return words.every(function (word) { return text.indexOf(word) >= 0; });
  }

  function readHash() {
    var state = {};
    window.location.hash.replace(/^#/, "").split("&").forEach(function (pair) {
      var parts = pair.split("=");
      if (parts[0]) state[decodeURIComponent(parts[0])] = decodeURIComponent(parts[1] || "");
    });
    search.value = state.q || "";
    family.value = state.family || "";
    outcome.value = state.outcome || "";
    disagree.checked = state.disagree === "1";
    group.checked = state.group === "1";
  }

  function writeHash() {
    var state = [];
    if (search.value) state.push("q=" + encodeURIComponent(search.value));
    if (family.value) state.push("family=" + encodeURIComponent(family.value));
    if (outcome.value) state.push("outcome=" + encodeURIComponent(outcome.value));
    if (disagree.checked) state.push("disagree=1");
    if (group.checked) state.push("group=1");
    var hash = state.length ? "#" + state.join("&") : "";
    if (hash !== window.location.hash) history.replaceState(null, "", hash || window.location.pathname);
  }

  function apply() {
    var words = search.value.toLowerCase().split(/\s+/).filter(Boolean);
    bodies.forEach(function (body) {
      body.classList.toggle("hidden", !!family.value && body.dataset.family !== family.value);
    });
    var shownRows = 0;
    var caseShown = {};
    rows.forEach(function (row) {
      var show = (!family.value || row.dataset.family === family.value) &&
        (!outcome.value || row.dataset.outcomes.split(" ").indexOf(outcome.value) >= 0) &&
        (!disagree.checked || row.dataset.agree === "0") && matches(row, words);
      row.classList.toggle("hidden", !show);
      if (show) { shownRows += 1; caseShown[row.dataset.case] = true; }
    });
    var shownCases = 0;
    lines.forEach(function (line) {
      var show = caseShown[line.dataset.case] === true;  // a case is shown when one of its rows is
      line.classList.toggle("hidden", !show);
      if (show) shownCases += 1;
    });
    count.textContent = shownCases + " of " + lines.length + " cases, " + shownRows + " of " + rows.length + " rows";
    var ordered = rows.slice().sort(function (a, b) {
      if (group.checked && a.dataset.vector !== b.dataset.vector) {
        return a.dataset.vector < b.dataset.vector ? -1 : 1;
      }
      return Number(a.dataset.index) - Number(b.dataset.index);
    });
    ordered.forEach(function (row) { row.parentNode.appendChild(row); });
    writeHash();
  }
  readHash();
  [family, outcome, disagree, group].forEach(function (control) {
    control.addEventListener("change", apply);
  });
  search.addEventListener("input", apply);
  window.addEventListener("hashchange", function () { readHash(); apply(); });
  apply();
})();
