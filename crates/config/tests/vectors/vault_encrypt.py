"""Writes ansible-vault 1.1 AES256 text, independently of datadiff, for its test fixtures.

Usage: python3 vault_encrypt.py PASSWORD < plaintext > vaulted
The format is Ansible's: PBKDF2-HMAC-SHA256 (10,000 iterations, 32-byte salt) -> 80 bytes
(AES key, HMAC key, counter IV); AES-256-CTR over PKCS#7-padded text; HMAC-SHA256 of the
ciphertext; hexlify(salt_hex \n hmac_hex \n ciphertext_hex) wrapped at 80 columns.
A fixed salt keeps the output reproducible.
"""
import binascii
import hashlib
import hmac
import sys

from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

password = sys.argv[1].encode()
plaintext = sys.stdin.buffer.read()
salt = hashlib.sha256(b"datadiff fixture salt").digest()
derived = hashlib.pbkdf2_hmac("sha256", password, salt, 10000, 80)
key, hmac_key, iv = derived[:32], derived[32:64], derived[64:80]
padder = padding.PKCS7(128).padder()
padded = padder.update(plaintext) + padder.finalize()
encryptor = Cipher(algorithms.AES(key), modes.CTR(iv)).encryptor()
ciphertext = encryptor.update(padded) + encryptor.finalize()
tag = hmac.new(hmac_key, ciphertext, hashlib.sha256).hexdigest().encode()
body = binascii.hexlify(b"\n".join([binascii.hexlify(salt), tag, binascii.hexlify(ciphertext)])).decode()
print("$ANSIBLE_VAULT;1.1;AES256")
for start in range(0, len(body), 80):
    print(body[start:start + 80])
