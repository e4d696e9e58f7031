// memhook web view: shows <time> elements in the browser's local time.
// Pages work without it; it never builds markup from text.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll("time[datetime]").forEach(function (el) {
    var d = new Date(el.getAttribute("datetime"));
    if (!isNaN(d.getTime())) {
      el.title = el.textContent;
      el.textContent = d.toLocaleString();
    }
  });
});
