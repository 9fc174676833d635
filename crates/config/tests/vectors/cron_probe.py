from croniter import croniter
from datetime import datetime, timezone
exprs = ["0 * * * *","*/15 * * * *","0 */6 * * *","1h","15min","every hour","0 * * *","0 0 * * * *","0 0 * * * * *",
"@hourly","@daily","@weekly","@monthly","@yearly","@annually","@midnight","@reboot","@HOURLY",
"0 0 ? * *","0 0 * * ?","0 0 L * *","0 0 * * 5L","0 0 * * L5","0 0 * * 5#3","0 0 15W * *","0 0 * * +1",
"0/10 * * * *","/10 * * * *","5-1 * * * *","0 0 * * 5-1","60 * * * *","0 24 * * *","0 0 0 * *","0 0 32 * *","0 0 * 13 *","0 0 * * 8","0 0 * * 7",
"0 0 * jan mon","0 0 * JAN-MAR MON-FRI","0 0 * * sunday","0 0 * * SUN-SAT","*/0 * * * *","0 0 1 * MON","0 0 */2 * MON","1,2,3 * * * *","1-10/3 * * * *",
"  0 * * * *  ","0\t*\t*\t*\t*","* * * * * 2025","0 0 * * 0-7","0 0 29 2 *","0 0 31 2 *","0 0 30 2 *","00 01 * * *","0 0 H * *","-1 * * * *","0 0 1-31/31 * *", "", "0 0 * * MON#2", "0 0 LW * *", "0 0 1,L * *"]
for e in exprs:
    v = croniter.is_valid(e)
    res = []
    if v:
        for now in [datetime(2026,7,22,13,47,59,tzinfo=timezone.utc), datetime(2026,7,22,13,0,0,tzinfo=timezone.utc)]:
            try:
                res.append(croniter(e, now).get_prev(datetime).isoformat())
            except Exception as x:
                res.append("ERR "+type(x).__name__)
    print(repr(e), v, res)
