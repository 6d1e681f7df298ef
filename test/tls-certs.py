#!/usr/bin/env python3
"""Certificates for the --tls cases (cases-tls.sh), made fresh in DIR:

  ca.pem                  the CA both sides trust
  host.pem, host.key      NAME (CN and an IP or DNS SAN), signed by the CA
  other-ca.pem            a CA that signed nothing of the above
  stranger.pem/.key       NAME, signed by other-ca (refused by a peer trusting ca.pem)
  wrongname.pem/.key      CN elsewhere.invalid (no SAN), signed by the CA
  expired.pem/.key        NAME, signed by the CA, expired yesterday
  revoked.pem/.key        NAME, signed by the CA, listed in crl.pem
  crl.pem                 the CA's revocation list (revoked.pem in it)

usage: tls-certs.py DIR NAME
"""
import datetime
import ipaddress
import sys

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

NOW = datetime.datetime.now(datetime.timezone.utc)
DAY = datetime.timedelta(days=1)


def name(cn):
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def save(d, base, cert, key):
    write(f"{d}/{base}.pem", cert.public_bytes(serialization.Encoding.PEM))
    if key is not None:
        write(f"{d}/{base}.key", key.private_bytes(serialization.Encoding.PEM,
                                                  serialization.PrivateFormat.PKCS8,
                                                  serialization.NoEncryption()))


def make_ca(cn):
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder().subject_name(name(cn)).issuer_name(name(cn))
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(NOW - DAY).not_valid_after(NOW + 30 * DAY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(False, False, False, False, False, True, True,
                                         False, False), critical=True)
            .sign(key, hashes.SHA256()))
    return cert, key


def make_leaf(ca, ca_key, cn, san, before, after):
    key = ec.generate_private_key(ec.SECP256R1())
    b = (x509.CertificateBuilder().subject_name(name(cn)).issuer_name(ca.subject)
         .public_key(key.public_key()).serial_number(x509.random_serial_number())
         .not_valid_before(before).not_valid_after(after)
         .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
         .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH,
                                               x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH]),
                        critical=False))
    if san:
        try:
            alt = x509.IPAddress(ipaddress.ip_address(san))
        except ValueError:
            alt = x509.DNSName(san)
        b = b.add_extension(x509.SubjectAlternativeName([alt]), critical=False)
    return b.sign(ca_key, hashes.SHA256()), key


def main():
    d, host = sys.argv[1], sys.argv[2]
    ca, ca_key = make_ca("memdump test CA")
    other, other_key = make_ca("memdump other CA")
    save(d, "ca", ca, None)
    save(d, "other-ca", other, None)
    save(d, "host", *make_leaf(ca, ca_key, host, host, NOW - DAY, NOW + 30 * DAY))
    save(d, "stranger", *make_leaf(other, other_key, host, host, NOW - DAY, NOW + 30 * DAY))
    save(d, "wrongname", *make_leaf(ca, ca_key, "elsewhere.invalid", None, NOW - DAY,
                                    NOW + 30 * DAY))
    save(d, "expired", *make_leaf(ca, ca_key, host, host, NOW - 30 * DAY, NOW - DAY))
    revoked, revoked_key = make_leaf(ca, ca_key, host, host, NOW - DAY, NOW + 30 * DAY)
    save(d, "revoked", revoked, revoked_key)
    entry = (x509.RevokedCertificateBuilder().serial_number(revoked.serial_number)
             .revocation_date(NOW - DAY).build())
    crl = (x509.CertificateRevocationListBuilder().issuer_name(ca.subject)
           .last_update(NOW - DAY).next_update(NOW + 30 * DAY)
           .add_revoked_certificate(entry).sign(ca_key, hashes.SHA256()))
    write(f"{d}/crl.pem", crl.public_bytes(serialization.Encoding.PEM))


if __name__ == "__main__":
    main()
