/*
 * pagamentos.js: take live card payments in your own checkout without card numbers ever reaching your server or
 * ours. It wraps Efí's browser library (payment-token-efi), which must be loaded first:
 *
 *   <script src="https://cdn.jsdelivr.net/gh/efipay/js-payment-token-efi/dist/payment-token-efi-umd.min.js"></script>
 *   <script src="https://YOUR-PAGAMENTOS-HOST/static/js/pagamentos.js"></script>
 *
 *   var card = Pagamentos.card({payeeCode: "…", environment: "production"});   // your Efí account's identifier
 *   card.brand("4111 1111 1111 1111").then(function (brand) { … });            // "visa", "mastercard", …
 *   card.tokenize({number: "…", cvv: "…", expirationMonth: "12", expirationYear: "2030"})
 *       .then(function (result) { … result.token, result.brand, result.mask … });
 *
 * Send result.token as card.token in POST /payin (with installments and the payer's billing address); list the
 * installments with GET /payin/installments?amount=&brand= from your server. docs/cards.md has the whole guide.
 */
(function (root) {
  "use strict";

  var BRANDS = ["visa", "mastercard", "amex", "elo", "hipercard"];

  function digits(text) { return String(text || "").replace(/\D+/g, ""); }

  function efi() {
    if (!root.EfiPay || !root.EfiPay.CreditCard) {
      throw new Error("Load Efí's payment-token-efi library before pagamentos.js");
    }
    return root.EfiPay.CreditCard;
  }

  // Efí's library rejects with {code, error, error_description}; one Error for every failure.
  function failure(problem) {
    var error = new Error((problem && (problem.error_description || problem.message)) || "Card tokenization failed");
    error.code = (problem && (problem.code || problem.error)) || "tokenization_failed";
    return error;
  }

  function card(options) {
    options = options || {};
    if (!options.payeeCode) throw new Error("payeeCode is required: your Efí account's identifier");
    var environment = options.environment === "sandbox" ? "sandbox" : "production";

    function brand(number) {
      return Promise.resolve().then(function () {
        return efi().setCardNumber(digits(number)).verifyCardBrand();
      }).then(function (found) {
        if (BRANDS.indexOf(found) < 0) throw failure({code: "unsupported_brand", error_description: "Card brand not accepted"});
        return found;
      }, function (problem) { throw failure(problem); });
    }

    function tokenize(data) {
      var number = digits(data.number);
      var known = data.brand ? Promise.resolve(data.brand) : brand(number);
      return known.then(function (found) {
        return Promise.resolve(efi().setAccount(options.payeeCode).setEnvironment(environment).setCreditCardData({
          brand: found, number: number, cvv: digits(data.cvv), expirationMonth: ("0" + digits(data.expirationMonth)).slice(-2),
          expirationYear: digits(data.expirationYear).length === 2 ? "20" + digits(data.expirationYear) : digits(data.expirationYear),
          reuse: false
        }).getPaymentToken()).then(function (answer) {
          if (!answer || !answer.payment_token) throw failure(answer);
          return {token: answer.payment_token, mask: answer.card_mask || "", brand: found};
        }, function (problem) { throw failure(problem); });
      });
    }

    return {brand: brand, tokenize: tokenize};
  }

  root.Pagamentos = {card: card, brands: BRANDS.slice()};
})(typeof window !== "undefined" ? window : this);
