// Filters for the matrix: family, outcome, "only rows where clients disagree", grouping by
// identical outcome vectors. Works from file:// (no fetch, no modules).
(function () {
  var table = document.getElementById("matrix");
  if (!table) return;
  var body = table.tBodies[0];
  var rows = Array.prototype.slice.call(body.rows);
  var family = document.getElementById("f-family");
  var outcome = document.getElementById("f-outcome");
  var disagree = document.getElementById("f-disagree");
  var group = document.getElementById("f-group");

  function apply() {
    rows.forEach(function (row) {
      var show = (!family.value || row.dataset.family === family.value) &&
        (!outcome.value || row.dataset.outcomes.split(" ").indexOf(outcome.value) >= 0) &&
        (!disagree.checked || row.dataset.agree === "0");
      row.classList.toggle("hidden", !show);
    });
    var ordered = rows.slice().sort(function (a, b) {
      if (group.checked && a.dataset.vector !== b.dataset.vector) {
        return a.dataset.vector < b.dataset.vector ? -1 : 1;
      }
      return Number(a.dataset.index) - Number(b.dataset.index);
    });
    ordered.forEach(function (row) { body.appendChild(row); });
  }
  [family, outcome, disagree, group].forEach(function (control) {
    control.addEventListener("change", apply);
  });
})();
