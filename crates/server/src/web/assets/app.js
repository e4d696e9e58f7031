// memhook web view: shows <time> elements in the browser's local time and
// copies an id's full text (its title) when the short id is clicked.
// Pages work without it; it never builds markup from text.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll("time[datetime]").forEach(function (el) {
    var d = new Date(el.getAttribute("datetime"));
    if (!isNaN(d.getTime())) {
      el.title = el.textContent + " (" + el.getAttribute("datetime") + ")";
      el.textContent = el.classList.contains("clock")
        ? d.toLocaleTimeString()
        : d.toLocaleString();
    }
  });
  document.querySelectorAll("code.id[title]").forEach(function (el) {
    el.addEventListener("click", function (ev) {
      ev.preventDefault();
      if (!navigator.clipboard) return;
      navigator.clipboard.writeText(el.title).then(function () {
        el.classList.add("copied");
        setTimeout(function () { el.classList.remove("copied"); }, 1200);
      });
    });
  });
});
