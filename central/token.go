package central

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/id"
)

// tokenLeeway absorbs clock skew between instances.
const tokenLeeway = 10 * time.Second

// TokenClaims are the claims of a dashboard token: sub is the user id,
// tid the tenant (workspace) id, sep the user's session epoch when it was
// issued (a password change raises the epoch, ending every older token),
// jti a random id, so that two logins within a second get two tokens.
type TokenClaims struct {
	jwt.RegisteredClaims
	// Sub shadows RegisteredClaims.Subject: it is written as a string
	// (RFC 7519) and read from a string or a number.
	Sub      numericID `json:"sub"`
	TenantID int64     `json:"tid"`
	// Epoch is the user's session epoch at issue; absent reads as 0.
	Epoch int64 `json:"sep,omitempty"`

	// sessionID names the token's session for sign-out (ParseToken).
	sessionID []byte
}

// Validate rejects tokens that do not name a user and a tenant.
func (c TokenClaims) Validate() error {
	if c.Sub <= 0 || c.TenantID <= 0 {
		return errors.New("token lacks sub or tid")
	}
	return nil
}

// numericID is a positive integer id carried as a JSON string.
type numericID int64

func (n numericID) MarshalJSON() ([]byte, error) {
	return json.Marshal(strconv.FormatInt(int64(n), 10))
}

func (n *numericID) UnmarshalJSON(b []byte) error {
	s := string(bytes.Trim(b, `"`))
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("id %s: %w", b, err)
	}
	*n = numericID(v)
	return nil
}

// IssueToken signs a dashboard token for a user of a tenant at the user's
// session epoch, valid for TokenTTL from now: HS256 under the server
// secret.
func (c *Central) IssueToken(userID, tenantID, epoch int64, now time.Time) (string, error) {
	claims := TokenClaims{
		RegisteredClaims: jwt.RegisteredClaims{IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(TokenTTL)),
			ID: id.New("ses_")},
		Sub:      numericID(userID),
		TenantID: tenantID,
		Epoch:    epoch,
	}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(c.secret)
}

// ParseToken verifies a dashboard token: HS256 only, signed with the
// server secret, not expired, naming a user and a tenant. The error is a
// 401 with the Bearer challenge. Whether its session was ended is the
// database's to say (DashboardAuth).
func (c *Central) ParseToken(token string) (*TokenClaims, error) {
	claims := &TokenClaims{}
	_, err := jwt.ParseWithClaims(token, claims, func(*jwt.Token) (any, error) { return c.secret, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}), jwt.WithExpirationRequired(), jwt.WithIssuedAt(), jwt.WithLeeway(tokenLeeway))
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return nil, httpapi.Unauthorized("the dashboard token has expired; log in again")
	case err != nil:
		return nil, httpapi.Unauthorized("the dashboard token is not valid")
	}
	claims.sessionID = sessionID(token)
	return claims, nil
}

// sessionID is the id a token's session is signed out under: the SHA-256
// of its signed part (header and claims). Nobody can change that part
// without the secret, while the signature's encoding can be varied
// without changing what it decodes to; and it names a token made
// elsewhere with the secret, which may carry no jti, as well.
func sessionID(token string) []byte {
	signed := token[:strings.LastIndexByte(token, '.')]
	sum := sha256.Sum256([]byte(signed))
	return sum[:]
}

// UserID is the user a token names.
func (c *TokenClaims) UserID() int64 { return int64(c.Sub) }
