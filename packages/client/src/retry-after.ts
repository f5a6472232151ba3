const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const DAY = '(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)';
const LONG_DAY = '(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)';
const MONTH = `(${MONTHS.join('|')})`;
const TIME = '(\\d{2}):(\\d{2}):(\\d{2})';
// The three HTTP-date forms a recipient must accept (RFC 9110, section 5.6.7).
const IMF_FIXDATE = new RegExp(`^${DAY}, (\\d{2}) ${MONTH} (\\d{4}) ${TIME} GMT$`);
const RFC850_DATE = new RegExp(`^${LONG_DAY}, (\\d{2})-${MONTH}-(\\d{2}) ${TIME} GMT$`);
const ASCTIME_DATE = new RegExp(`^${DAY} ${MONTH} ([ \\d]\\d) ${TIME} (\\d{4})$`);

/**
 * The seconds a `Retry-After` value asks to wait, or undefined when it is not
 * one (RFC 9110, section 10.2.3): delta-seconds, or an HTTP-date counted from
 * `now`, rounded up so that waiting it is never too early, and 0 for a date
 * already past. Written out rather than left to `Date.parse`, which takes
 * "-1" or "1.5" for dates in 2001 and would turn garbage into "retry now".
 */
export function retryAfterSeconds(header: string | null | undefined, now: number = Date.now()): number | undefined {
  if (header === null || header === undefined) return undefined;
  const value = header.trim();
  if (/^\d+$/.test(value)) return Number(value);
  const date = httpDate(value, now);
  return date === undefined ? undefined : Math.max(0, Math.ceil((date - now) / 1000));
}

/** An HTTP-date in milliseconds since the epoch, or undefined for anything else, an impossible day (31 Feb) included. */
function httpDate(value: string, now: number): number | undefined {
  let fields: { day: string; month: string; year: number; hour: string; minute: string; second: string };
  let match: RegExpExecArray | null;
  if ((match = IMF_FIXDATE.exec(value))) {
    const [, day = '', month = '', year = '', hour = '', minute = '', second = ''] = match;
    fields = { day, month, year: Number(year), hour, minute, second };
  } else if ((match = RFC850_DATE.exec(value))) {
    const [, day = '', month = '', year = '', hour = '', minute = '', second = ''] = match;
    fields = { day, month, year: twoDigitYear(Number(year), now), hour, minute, second };
  } else if ((match = ASCTIME_DATE.exec(value))) {
    const [, month = '', day = '', hour = '', minute = '', second = '', year = ''] = match;
    fields = { day, month, year: Number(year), hour, minute, second };
  } else {
    return undefined;
  }
  const [day, month, hour, minute, second] = [Number(fields.day), MONTHS.indexOf(fields.month), Number(fields.hour), Number(fields.minute), Number(fields.second)];
  // 60 is a leap second.
  if (hour > 23 || minute > 59 || second > 60) return undefined;
  const midnight = new Date(0);
  // setUTCFullYear, as Date.UTC would read years 0-99 as 1900-1999.
  midnight.setUTCFullYear(fields.year, month, day);
  // Date rolls 31 Feb over into March: such a day is not a date.
  if (midnight.getUTCFullYear() !== fields.year || midnight.getUTCMonth() !== month || midnight.getUTCDate() !== day) return undefined;
  return midnight.getTime() + ((hour * 60 + minute) * 60 + second) * 1000;
}

/** RFC 9110: a two-digit year more than 50 years ahead is the latest past year with those digits. */
function twoDigitYear(yy: number, now: number): number {
  const thisYear = new Date(now).getUTCFullYear();
  let year = thisYear - (thisYear % 100) + yy;
  if (year > thisYear + 50) year -= 100;
  return year;
}
