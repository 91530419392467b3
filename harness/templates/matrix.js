// Filters for the matrix: family, outcome, "only rows where clients disagree", grouping by
// identical outcome vectors. Works from file:// (no fetch, no modules).
(function () {
  var table = document.getElementById("matrix");
  if (!table) return;
  var bodies = Array.prototype.slice.call(table.tBodies);
  var rows = [];
  bodies.forEach(function (body) {
    Array.prototype.forEach.call(body.rows, function (row) {
      if (row.dataset.vector !== undefined) rows.push(row);
    });
  });
  var family = document.getElementById("f-family");
  var outcome = document.getElementById("f-outcome");
  var disagree = document.getElementById("f-disagree");
  var group = document.getElementById("f-group");

  function apply() {
    bodies.forEach(function (body) {
      body.classList.toggle("hidden", !!family.value && body.dataset.family !== family.value);
    });
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
    ordered.forEach(function (row) { row.parentNode.appendChild(row); });
  }
  [family, outcome, disagree, group].forEach(function (control) {
    control.addEventListener("change", apply);
  });
})();
