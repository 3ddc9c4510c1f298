// The hosted page's card form: the card is tokenized in this browser by Efí's library (through pagamentos.js) and
// only the token, the installments and the billing address are posted. The card fields have no name: a browser
// never submits them, even if this script fails.
(function () {
  "use strict";
  var form = document.querySelector("[data-card-form]");
  if (!form || !window.Pagamentos) return;
  form.hidden = false;
  var card = window.Pagamentos.card({payeeCode: form.getAttribute("data-payee-code"),
                                     environment: form.getAttribute("data-environment")});
  var number = form.querySelector("[data-card-number]");
  var select = form.querySelector("[data-installments]");
  var error = form.querySelector("[data-card-error]");
  var button = form.querySelector("button[type=submit]");
  var brand = "";

  function show(message) { error.textContent = message; error.hidden = !message; }

  function installments(found) {
    var url = form.getAttribute("data-installments-url") + "?brand=" + encodeURIComponent(found);
    fetch(url, {credentials: "same-origin"}).then(function (response) { return response.json(); }).then(function (body) {
      if (!body.data || !body.data.length) return;
      var chosen = select.value;
      select.textContent = "";
      body.data.forEach(function (option) {
        var item = document.createElement("option");
        item.value = String(option.installments);
        item.textContent = option.label;
        select.appendChild(item);
      });
      if (chosen) select.value = chosen;
    }).catch(function () { /* the single installment stays */ });
  }

  number.addEventListener("change", function () {
    card.brand(number.value).then(function (found) {
      if (found !== brand) { brand = found; installments(found); }
      show("");
    }, function () { show(form.getAttribute("data-brand-error")); });
  });

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    button.disabled = true;
    show("");
    card.tokenize({
      number: number.value, brand: brand || undefined,
      cvv: form.querySelector("[data-card-cvv]").value,
      expirationMonth: form.querySelector("[data-card-month]").value,
      expirationYear: form.querySelector("[data-card-year]").value
    }).then(function (result) {
      form.querySelector("[data-payment-token]").value = result.token;
      form.submit();
    }, function () {
      show(form.getAttribute("data-tokenize-error"));
      button.disabled = false;
    });
  });
})();
